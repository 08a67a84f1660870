"""The namespaces of a tenant-scoped installation, kept current in the observation cache by
reading them one by one.

A Role in a namespace may grant ``get`` of that namespace, never a list or a watch of
namespaces (those are cluster-wide requests), so a tenant-scoped installation cannot watch
them. ``NamespacePoller`` reads each managed namespace every ``interval_s`` (well inside the
cache's staleness bound) and replaces the cache's namespaces with what it found; a round that
fails leaves the records as they were and proves nothing, so the bound still holds. It runs in
the informer's thread until ``stop`` is set.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import cache, client, kinds, watched
from occ.telemetry import observability

INTERVAL_S: Final = 15.0
"""How often the managed namespaces are read (a quarter of the staleness bound)."""


class NamespacePoller:
    """Reads the managed namespaces into the cache (``run`` is a thread's target)."""

    kind: Final = kinds.NAMESPACE

    def __init__(
        self,
        api: client.KubernetesApi,
        namespaces: Sequence[str],
        store: cache.ObjectCache,
        stop: threading.Event,
        *,
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.api = api
        self.namespaces = tuple(namespaces)
        self.store = store
        self.stop = stop
        self.interval_s = interval_s

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.poll()
            except base.DriverError as exc:
                observability.log(
                    "compute.kubernetes-watch-failed",
                    level=logging.WARNING,
                    operation="read Namespace",
                    code=exc.code,
                    error=type(exc).__name__,
                )
            self.stop.wait(self.interval_s)

    def poll(self) -> None:
        """One round: every managed namespace that exists, as the cache keeps it."""
        records = []
        for name in self.namespaces:
            found = self.api.read(kinds.NAMESPACE, None, name)
            if found is not None:
                records.append(watched.metadata_record(found))
        self.store.replace(kinds.NAMESPACE, records)

    def interrupt(self) -> None:
        """Nothing to break: the thread waits on ``stop``."""
