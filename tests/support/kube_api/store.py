"""The fake apiserver's object store: objects, system metadata, versions, history, listing.

Models etcd plus the generic registry: a global ``resourceVersion`` counter, ``uid`` and
``creationTimestamp`` on create, ``generation`` bumped only when something outside
``metadata`` and ``status`` changes, writes that change nothing keep every version (no-op
detection), an object whose deletion waits on finalizers disappears once they are gone, and
every change is recorded in the ``history`` a watch replays. Objects are indexed by kind,
namespace and name, so a list reads only its kind (and namespace). A stored object is never
changed in place (a write stores a new dict), so lists and watches may serialize what they
selected after releasing the lock. It must not check requests (names, preconditions,
permissions): callers do.
"""

from __future__ import annotations

import bisect
import copy
import datetime
import ipaddress
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.kube_api import history, resources

Obj = resources.Obj
Key = tuple[str, str | None, str]
Position = tuple[str, str]
"""Where an object sits in a list: (namespace, or "" when cluster-scoped; name)."""

SYSTEM_METADATA = resources.SYSTEM_METADATA
_SERVICE_NETWORK = ipaddress.ip_network("10.96.0.0/16")


def now() -> str:
    """The current time in the apiserver's RFC 3339 form (seconds, UTC, ``Z``)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _content(obj: Obj) -> Obj:
    """What no-op detection compares: everything but the versions and field managers."""
    compared = copy.deepcopy(obj)
    metadata = compared.get("metadata", {})
    for field in ("resourceVersion", "managedFields", "generation"):
        metadata.pop(field, None)
    return compared


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class Store:
    """All objects by kind, namespace and name, behind one re-entrant lock."""

    def __init__(self, history_limit: int = history.DEFAULT_LIMIT) -> None:
        self.lock = threading.RLock()
        self.history = history.History(self.lock, history_limit)
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._version = 0
        self._cluster_ips = _SERVICE_NETWORK.hosts()

    def clear(self) -> None:
        """No objects; every earlier version expires (a watch from one is told 410), since
        the objects went without a change a watch could replay."""
        with self.lock:
            self._objects.clear()
            self.history.compact(int(self._next_version()))

    def resource_version(self) -> str:
        """The newest resourceVersion handed out (what a list reports)."""
        with self.lock:
            return str(self._version)

    @property
    def version(self) -> int:
        return self._version

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def allocate_cluster_ip(self) -> str:
        with self.lock:
            next(self._cluster_ips)  # skip .1, the apiserver's own Service address
            return str(next(self._cluster_ips))

    # -- reads ----------------------------------------------------------------------------

    def _stored(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        return self._objects.get(plural, {}).get(namespace or "", {}).get(name)

    def _existing(
        self, resource: resources.Resource, metadata: Obj, verb: str
    ) -> tuple[str | None, Obj]:
        """The namespace and stored object that ``metadata`` names; ``KeyError`` (naming the
        ``verb`` refused) when there is none."""
        namespace = metadata.get("namespace") if resource.namespaced else None
        old = self._stored(resource.plural, namespace, metadata["name"])
        if old is None:
            raise KeyError(f"no {resource.plural} {namespace}/{metadata['name']} to {verb}")
        return namespace, old

    def get(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            obj = self._stored(plural, namespace, name)
            return copy.deepcopy(obj) if obj is not None else None

    def items(
        self,
        plural: str,
        namespace: str | None = None,
        predicate: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Copies of the objects of ``plural`` (in ``namespace`` if given), etcd key order."""
        with self.lock:
            found, _ = self.select(plural, namespace, predicate)
            return copy.deepcopy(found)

    def select(
        self,
        plural: str,
        namespace: str | None,
        predicate: Callable[[Obj], bool] | None = None,
        *,
        after: Position | None = None,
        limit: int | None = None,
    ) -> tuple[list[Obj], Position | None]:
        """The stored objects (not copies: never change them) of ``plural`` in key order,
        after ``after``, at most ``limit``; and the position of the last one returned when
        more match beyond it (``None`` when the list is complete)."""
        with self.lock:
            by_namespace = self._objects.get(plural, {})
            spaces = [namespace or ""] if namespace is not None else sorted(by_namespace)
            if after is not None:
                spaces = spaces[bisect.bisect_left(spaces, after[0]) :]
            found: list[Obj] = []
            for space in spaces:
                names = sorted(by_namespace.get(space, {}))
                if after is not None and space == after[0]:
                    names = names[bisect.bisect_right(names, after[1]) :]
                for name in names:
                    obj = by_namespace[space][name]
                    if predicate is not None and not predicate(obj):
                        continue
                    if limit is not None and len(found) == limit:
                        last = found[-1]["metadata"]
                        return found, (last.get("namespace") or "", last["name"])
                    found.append(obj)
            return found, None

    def keys_in_namespace(self, namespace: str) -> Iterator[Key]:
        with self.lock:
            return iter(
                [
                    (plural, namespace, name)
                    for plural, by_namespace in self._objects.items()
                    for name in by_namespace.get(namespace, {})
                ]
            )

    # -- writes ---------------------------------------------------------------------------

    def _put(self, plural: str, obj: Obj) -> None:
        metadata = obj["metadata"]
        space = metadata.get("namespace") or ""
        self._objects.setdefault(plural, {}).setdefault(space, {})[metadata["name"]] = obj

    def _record(
        self, plural: str, kind: history.ChangeType, obj: Obj, previous: Obj | None
    ) -> None:
        change = history.Change(
            self._version, kind, plural, obj["metadata"].get("namespace"), obj, previous
        )
        self.history.record(change)

    def create(self, resource: resources.Resource, obj: Obj, manager: str, operation: str) -> Obj:
        """Store a new object with fresh system metadata; the caller checked it is absent."""
        with self.lock:
            stored = copy.deepcopy(obj)
            metadata = stored.setdefault("metadata", {})
            for field in SYSTEM_METADATA:
                metadata.pop(field, None)
            if not resource.namespaced:
                metadata.pop("namespace", None)
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = now()
            metadata["resourceVersion"] = self._next_version()
            if resource.has_spec:
                metadata["generation"] = 1
            metadata["managedFields"] = [_managed_entry(resource, manager, operation)]
            self._put(resource.plural, stored)
            self._record(resource.plural, "ADDED", stored, None)
            return copy.deepcopy(stored)

    def update(self, resource: resources.Resource, new: Obj, manager: str, operation: str) -> Obj:
        """Replace the stored object with ``new`` (system metadata already carried over).

        A write that changes nothing keeps resourceVersion and generation; a change outside
        metadata and status bumps generation; a deleting object without finalizers goes.
        """
        with self.lock:
            namespace, old = self._existing(resource, new["metadata"], "update")
            if _content(old) == _content(new):
                return copy.deepcopy(old)
            stored = copy.deepcopy(new)
            metadata = stored["metadata"]
            metadata["resourceVersion"] = self._next_version()
            if resource.has_spec:
                generation = old["metadata"].get("generation", 1)
                changed = _spec_part(old) != _spec_part(stored)
                metadata["generation"] = generation + 1 if changed else generation
            metadata["managedFields"] = _record_manager(
                old["metadata"].get("managedFields") or [], resource, manager, operation
            )
            finished = metadata.get("deletionTimestamp") and not metadata.get("finalizers")
            if finished and resource.plural != "namespaces":
                del self._objects[resource.plural][namespace or ""][metadata["name"]]
                self._record(resource.plural, "DELETED", stored, old)
            else:
                self._put(resource.plural, stored)
                self._record(resource.plural, "MODIFIED", stored, old)
            return copy.deepcopy(stored)

    def mark_deleting(self, resource: resources.Resource, obj: Obj) -> Obj:
        """Set ``deletionTimestamp`` on an object that must wait (finalizers, namespaces)."""
        with self.lock:
            _, old = self._existing(resource, obj["metadata"], "delete")
            if old["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(old)
            stored = {**old, "metadata": dict(old["metadata"])}
            stored["metadata"]["deletionTimestamp"] = now()
            stored["metadata"]["deletionGracePeriodSeconds"] = 0
            if resource.plural == "namespaces":
                stored["status"] = {**(old.get("status") or {}), "phase": "Terminating"}
            stored["metadata"]["resourceVersion"] = self._next_version()
            self._put(resource.plural, stored)
            self._record(resource.plural, "MODIFIED", stored, old)
            return copy.deepcopy(stored)

    def remove(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        """Delete the object at once; the change carries it with the deletion's version."""
        with self.lock:
            old = self._objects.get(plural, {}).get(namespace or "", {}).pop(name, None)
            if old is None:
                return None
            gone = {**old, "metadata": {**old["metadata"], "resourceVersion": self._next_version()}}
            self._record(plural, "DELETED", gone, old)
            return old


def _managed_entry(resource: resources.Resource, manager: str, operation: str) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": resource.api_version,
        "time": now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    }


def _record_manager(
    entries: list[dict[str, Any]], resource: resources.Resource, manager: str, operation: str
) -> list[dict[str, Any]]:
    """One entry per (manager, operation); the writer's entry moves last with a new time."""
    kept = [
        entry
        for entry in entries
        if (entry.get("manager"), entry.get("operation")) != (manager, operation)
    ]
    return [*copy.deepcopy(kept), _managed_entry(resource, manager, operation)]
