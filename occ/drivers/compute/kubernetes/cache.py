"""The observation cache's store: the watched objects, their indexes, and how fresh they are.

Records (``watched``'s trimmed objects) are kept by kind, namespace and name, with two
indexes the observations use: EndpointSlices by their Service, namespaces by the occ
Namespace id they are labelled with. Per stream (a kind across all namespaces, or a kind in
one namespace of a tenant-scoped installation) the store also knows whether it was ever
listed (synced) and when the cluster last proved it current ("alive": a list, a watch
opened, an event or bookmark, a watch ended cleanly); a stream is fresh while that proof is
younger than the bound it is asked about. Writers (the watches) and readers (a batch of
observations, under ``view``) share one lock; nothing here talks to the cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from occ.drivers.compute.kubernetes import client, kinds, naming, watched

Wire = client.Wire
Key = tuple[str, str]
"""(namespace, "" when cluster-scoped; name)."""
Entry = TypeVar("Entry", str, Key)


def _key(record: Mapping[str, Any]) -> Key:
    metadata = record.get("metadata") or {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name")))


def stream(kind: kinds.Kind, namespace: str | None = None) -> str:
    """The name of the stream that keeps ``kind`` (in ``namespace``) current."""
    return kind.plural if namespace is None else f"{kind.plural} in {namespace}"


def _discard(index: dict[Entry, dict[str, Wire]], entry: Entry, name: str) -> None:
    members = index.get(entry)
    if members is not None:
        members.pop(name, None)
        if not members:
            del index[entry]


def _label(record: Mapping[str, Any], label: str) -> str | None:
    value = ((record.get("metadata") or {}).get("labels") or {}).get(label)
    return value if isinstance(value, str) else None


class View:
    """Reads of the store for one batch of observations (valid inside ``ObjectCache.view``)."""

    def __init__(self, store: ObjectCache) -> None:
        self._store = store

    def get(self, kind: kinds.Kind, namespace: str | None, name: str) -> Wire | None:
        return self._store.objects[kind.plural].get((namespace or "", name))

    def slices(self, namespace: str, service: str) -> list[Wire]:
        """The EndpointSlices of ``service`` in ``namespace``."""
        return list(self._store.slices.get((namespace, service), {}).values())

    def namespaces(self, namespace_id: str) -> list[Wire]:
        """The namespaces labelled with the occ Namespace ``namespace_id``."""
        return list(self._store.namespaces.get(namespace_id, {}).values())


class ObjectCache:
    """Watched objects by kind and key, and per stream whether and when they were current."""

    def __init__(
        self,
        cached: Sequence[kinds.Kind],
        *,
        clock: Callable[[], float] = time.monotonic,
        streams: Sequence[str] | None = None,
    ) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.objects: dict[str, dict[Key, Wire]] = {kind.plural: {} for kind in cached}
        self.slices: dict[Key, dict[str, Wire]] = {}
        self.namespaces: dict[str, dict[str, Wire]] = {}
        self._alive_at: dict[str, float] = {}
        self.streams = tuple(streams) if streams else tuple(kind.plural for kind in cached)

    # -- writes (the watches) ---------------------------------------------------------------

    def replace(
        self, kind: kinds.Kind, records: Iterable[Wire], namespace: str | None = None
    ) -> None:
        """Everything of ``kind`` (in ``namespace``), as a list found it (its stream is synced
        and alive)."""
        with self.changed:
            kept = self.objects[kind.plural]
            for key, record in list(kept.items()):
                if namespace is None or key[0] == namespace:
                    self._unindex(kind, record)
                    del kept[key]
            for record in records:
                self._store(kind, record)
            self._alive_at[stream(kind, namespace)] = self.clock()
            self.changed.notify_all()

    def put(self, kind: kinds.Kind, record: Wire) -> None:
        """An object added or changed."""
        with self.lock:
            self._store(kind, record)

    def drop(self, kind: kinds.Kind, record: Wire) -> None:
        """An object deleted (or no longer selected)."""
        with self.lock:
            old = self.objects[kind.plural].pop(_key(record), None)
            if old is not None:
                self._unindex(kind, old)

    def alive(self, kind: kinds.Kind, namespace: str | None = None) -> None:
        """The cluster just proved ``kind``'s records (in ``namespace``) current (a synced
        stream only)."""
        name = stream(kind, namespace)
        with self.changed:
            if name in self._alive_at:
                self._alive_at[name] = self.clock()
                self.changed.notify_all()

    def _store(self, kind: kinds.Kind, record: Wire) -> None:
        key = _key(record)
        old = self.objects[kind.plural].get(key)
        if old is not None:
            self._unindex(kind, old)
        self.objects[kind.plural][key] = record
        if kind == kinds.ENDPOINT_SLICE:
            service = _label(record, watched.SERVICE_NAME)
            if service is not None:
                self.slices.setdefault((key[0], service), {})[key[1]] = record
        elif kind == kinds.NAMESPACE:
            namespace_id = _label(record, naming.NAMESPACE_ID)
            if namespace_id is not None:
                self.namespaces.setdefault(namespace_id, {})[key[1]] = record

    def _unindex(self, kind: kinds.Kind, record: Wire) -> None:
        namespace, name = _key(record)
        if kind == kinds.ENDPOINT_SLICE:
            service = _label(record, watched.SERVICE_NAME) or ""
            _discard(self.slices, (namespace, service), name)
        elif kind == kinds.NAMESPACE:
            _discard(self.namespaces, _label(record, naming.NAMESPACE_ID) or "", name)

    # -- reads (the observations) -----------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Whether every stream was listed once."""
        with self.lock:
            return all(name in self._alive_at for name in self.streams)

    def stale(self, bound_s: float) -> list[str]:
        """The streams never listed or not proved current for more than ``bound_s``."""
        with self.lock:
            return self._stale(bound_s)

    def _stale(self, bound_s: float) -> list[str]:
        now = self.clock()
        return [
            name for name in self.streams if now - self._alive_at.get(name, -float("inf")) > bound_s
        ]

    def wait_fresh(self, bound_s: float, timeout_s: float) -> list[str]:
        """Wait up to ``timeout_s`` for every stream to be fresh; the streams still stale."""
        deadline = self.clock() + timeout_s
        with self.changed:
            while (stale := self._stale(bound_s)) and (left := deadline - self.clock()) > 0:
                self.changed.wait(left)
            return stale

    @contextmanager
    def view(self) -> Iterator[View]:
        """Read a consistent store (the watches wait meanwhile)."""
        with self.lock:
            yield View(self)

    def counts(self) -> dict[str, int]:
        """Records kept per kind."""
        with self.lock:
            return {plural: len(records) for plural, records in self.objects.items()}
