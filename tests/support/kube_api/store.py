"""The fake apiserver's object store: objects, system metadata, versions, listing.

Models etcd plus the generic registry: a global ``resourceVersion`` counter, ``uid`` and
``creationTimestamp`` on create, ``generation`` bumped only when something outside
``metadata`` and ``status`` changes, writes that change nothing keep every version (no-op
detection), and an object whose deletion waits on finalizers disappears once they are
gone. It must not check requests (names, preconditions, permissions): callers do.
"""

from __future__ import annotations

import copy
import datetime
import ipaddress
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.kube_api import resources

Obj = resources.Obj
Key = tuple[str, str | None, str]

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
    """All objects, keyed by (plural, namespace, name), behind one re-entrant lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._version = 0
        self._cluster_ips = _SERVICE_NETWORK.hosts()

    def clear(self) -> None:
        with self.lock:
            self._objects.clear()

    def resource_version(self) -> str:
        """The newest resourceVersion handed out (what a list reports)."""
        with self.lock:
            return str(self._version)

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def allocate_cluster_ip(self) -> str:
        with self.lock:
            next(self._cluster_ips)  # skip .1, the apiserver's own Service address
            return str(next(self._cluster_ips))

    def get(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            obj = self._objects.get((plural, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def items(
        self,
        plural: str,
        namespace: str | None = None,
        predicate: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Copies of the objects of ``plural`` (in ``namespace`` if given), etcd key order."""
        with self.lock:
            found = [
                copy.deepcopy(obj)
                for (kind, ns, _), obj in sorted(self._objects.items(), key=_sort_key)
                if kind == plural
                and (namespace is None or ns == namespace)
                and (predicate is None or predicate(obj))
            ]
        return found

    def keys_in_namespace(self, namespace: str) -> Iterator[Key]:
        with self.lock:
            return iter([key for key in self._objects if key[1] == namespace])

    def create(self, resource: resources.Resource, obj: Obj, manager: str, operation: str) -> Obj:
        """Store a new object with fresh system metadata; the caller checked it is absent."""
        with self.lock:
            stored = copy.deepcopy(obj)
            metadata = stored.setdefault("metadata", {})
            for field in SYSTEM_METADATA:
                metadata.pop(field, None)
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = now()
            metadata["resourceVersion"] = self._next_version()
            if resource.has_spec:
                metadata["generation"] = 1
            metadata["managedFields"] = [_managed_entry(resource, manager, operation)]
            self._objects[_key(resource, stored)] = stored
            return copy.deepcopy(stored)

    def update(self, resource: resources.Resource, new: Obj, manager: str, operation: str) -> Obj:
        """Replace the stored object with ``new`` (system metadata already carried over).

        A write that changes nothing keeps resourceVersion and generation; a change outside
        metadata and status bumps generation; a deleting object without finalizers goes.
        """
        with self.lock:
            key = _key(resource, new)
            old = self._objects[key]
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
                del self._objects[key]
            else:
                self._objects[key] = stored
            return copy.deepcopy(stored)

    def mark_deleting(self, resource: resources.Resource, obj: Obj) -> Obj:
        """Set ``deletionTimestamp`` on an object that must wait (finalizers, namespaces)."""
        with self.lock:
            stored = self._objects[_key(resource, obj)]
            if not stored["metadata"].get("deletionTimestamp"):
                stored["metadata"]["deletionTimestamp"] = now()
                stored["metadata"]["deletionGracePeriodSeconds"] = 0
                if resource.plural == "namespaces":
                    stored.setdefault("status", {})["phase"] = "Terminating"
                stored["metadata"]["resourceVersion"] = self._next_version()
            return copy.deepcopy(stored)

    def remove(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return self._objects.pop((plural, namespace, name), None)


def _key(resource: resources.Resource, obj: Obj) -> Key:
    metadata = obj["metadata"]
    namespace = metadata.get("namespace") if resource.namespaced else None
    return (resource.plural, namespace, metadata["name"])


def _sort_key(item: tuple[Key, Obj]) -> tuple[str, str, str]:
    (plural, namespace, name), _ = item
    return (plural, namespace or "", name)


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
