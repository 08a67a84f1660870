"""The observation cache of one process: a reflector thread per watched kind, started on use.

``view`` starts the reflectors the first time a process observes (and again in a forked
child, whose parent's threads did not come along), waits up to ``sync_wait_s`` for every
kind's first list, and lends the cache for one batch of observations. It refuses with
``NOT_OBSERVED`` (a ``TransientDriverError``) while some kind was never listed or has had
no proof of life from the cluster for more than ``stale_after_s``: observations never rest on
data older than that bound, and the caller retries later instead of acting on a guess.
``stop`` ends the threads and breaks their streams.

In a tenant-scoped installation (``namespaces`` given) each namespaced kind is watched in each
managed namespace, and the namespaces themselves are read by a ``polling.NamespacePoller``:
nothing asks for more than occ's Role grants there.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import cache, client, polling, watched, watching

NOT_OBSERVED: Final = "KUBERNETES_NOT_OBSERVED"
"""Why a bulk observation was refused: the cache has not synced, or is stale."""

STALE_AFTER_S: Final = 60.0
"""Longest a kind may go without proof of life before observations are refused. A healthy
watch proves life at least once per session (at most 45 s) even when nothing changes."""
SYNC_WAIT_S: Final = 10.0
"""Longest the first observation of a process waits for the first lists."""
STOP_WAIT_S: Final = 5.0


class Informer:
    """The reflectors of every watched kind, and the cache they fill."""

    def __init__(
        self,
        api: client.KubernetesApi,
        *,
        stale_after_s: float = STALE_AFTER_S,
        sync_wait_s: float = SYNC_WAIT_S,
        timing: watching.Timing = watching.TIMING,
        clock: Callable[[], float] = time.monotonic,
        namespaces: Sequence[str] | None = None,
        poll_interval_s: float = polling.INTERVAL_S,
    ) -> None:
        if stale_after_s <= timing.session_s[1]:
            raise ValueError("a bound below the longest watch session would refuse idle kinds")
        self.api = api
        self.stale_after_s = stale_after_s
        self.sync_wait_s = sync_wait_s
        self.timing = timing
        self.clock = clock
        self.namespaces = tuple(namespaces) if namespaces is not None else None
        self.poll_interval_s = poll_interval_s
        self.store = self._new_store()
        self._lock = threading.Lock()
        self._pid = 0
        self._stop = threading.Event()
        self._reflectors: list[watching.Reflector | polling.NamespacePoller] = []
        self._threads: list[threading.Thread] = []

    @property
    def streams(self) -> int:
        """How many lists and watches the cache keeps open at once."""
        return len(self.store.streams)

    def _new_store(self) -> cache.ObjectCache:
        kinds = [kind.kind for kind in watched.KINDS]
        if self.namespaces is None:
            return cache.ObjectCache(kinds, clock=self.clock)
        streams = [
            cache.stream(kind.kind, namespace if kind.kind.namespaced else None)
            for kind in watched.KINDS
            for namespace in (self.namespaces if kind.kind.namespaced else (None,))
        ]
        return cache.ObjectCache(kinds, clock=self.clock, streams=streams)

    def _readers(self) -> list[watching.Reflector | polling.NamespacePoller]:
        if self.namespaces is None:
            return [
                watching.Reflector(self.api, kind, self.store, self._stop, timing=self.timing)
                for kind in watched.KINDS
            ]
        readers: list[watching.Reflector | polling.NamespacePoller] = [
            polling.NamespacePoller(
                self.api, self.namespaces, self.store, self._stop, interval_s=self.poll_interval_s
            )
        ]
        readers.extend(
            watching.Reflector(
                self.api, kind, self.store, self._stop, timing=self.timing, namespace=namespace
            )
            for kind in watched.KINDS
            if kind.kind.namespaced
            for namespace in self.namespaces
        )
        return readers

    def start(self) -> None:
        """Start the reflectors unless they run in this process already."""
        with self._lock:
            if self._pid == os.getpid() and self._threads:
                return
            if self._pid != os.getpid():  # a fork: the parent's threads and records are gone
                self.store = self._new_store()
            self._pid = os.getpid()
            self._stop = threading.Event()
            self._reflectors = self._readers()
            self._threads = [
                threading.Thread(
                    target=reflector.run,
                    name=f"occ-kubernetes-watch-{reflector.kind.plural}",
                    daemon=True,
                )
                for reflector in self._reflectors
            ]
            for thread in self._threads:
                thread.start()

    def stop(self) -> None:
        """Stop every reflector and wait (bounded) for its thread."""
        with self._lock:
            threads, reflectors = self._threads, self._reflectors
            self._stop.set()
            self._threads, self._reflectors = [], []
        for reflector in reflectors:
            reflector.interrupt()
        deadline = time.monotonic() + STOP_WAIT_S
        for thread in threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))

    @property
    def running(self) -> bool:
        with self._lock:
            return self._pid == os.getpid() and any(t.is_alive() for t in self._threads)

    @contextmanager
    def view(self) -> Iterator[cache.View]:
        """The cache for one batch of observations; ``NOT_OBSERVED`` when it is not fresh."""
        self.start()
        # only the first lists are worth waiting for: a stale cache is refused at once
        waited_s = self.sync_wait_s if not self.store.synced else 0.0
        stale = self.store.wait_fresh(self.stale_after_s, waited_s)
        if stale:
            raise base.TransientDriverError(
                NOT_OBSERVED,
                "the observation cache is not current for " + ", ".join(sorted(stale)),
            )
        with self.store.view() as view:
            yield view
