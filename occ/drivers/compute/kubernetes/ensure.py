"""Idempotent ensure and teardown steps over the client: read, verify ownership, then write.

``applied`` converges an object occ fully owns with one server-side apply, and only when the
stored object differs from the desired one; ``created`` is create-only (immutable snapshots,
volumes). Both refuse an object that carries occ's name but not occ's labels instead of
adopting it. ``deleted`` removes an owned object under its ``uid``. No naming or policy here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import client, failures, kinds, naming

NOT_OWNED: Final = "KUBERNETES_OBJECT_NOT_OWNED"
ID_LABELS: Final = (naming.NAMESPACE_ID, naming.AGENT_ID, naming.REVISION_ID, naming.ROLE)


def contains(stored: Any, desired: Any) -> bool:
    """Whether ``stored`` already has every field of ``desired`` with the same value.

    Server defaults stored alongside are ignored; lists must match element by element.
    """
    if isinstance(desired, Mapping):
        return isinstance(stored, Mapping) and all(
            key in stored and contains(stored[key], value) for key, value in desired.items()
        )
    if isinstance(desired, list | tuple):
        return (
            isinstance(stored, list | tuple)
            and len(stored) == len(desired)
            and all(contains(s, d) for s, d in zip(stored, desired, strict=True))
        )
    return bool(stored == desired)


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    found = metadata(obj).get("labels")
    return found if isinstance(found, Mapping) else {}


def is_owned(obj: Mapping[str, Any], expected: Mapping[str, str]) -> bool:
    """Whether ``obj`` is occ's object for ``expected`` labels (ids and role compared)."""
    found = labels_of(obj)
    if found.get(naming.MANAGED_BY) != naming.MANAGER:
        return False
    return all(found.get(key) == expected[key] for key in ID_LABELS if key in expected)


def require_owned(kind: kinds.Kind, obj: Mapping[str, Any], expected: Mapping[str, str]) -> None:
    if not is_owned(obj, expected):
        name = metadata(obj).get("name", "?")
        raise base.PermanentDriverError(
            NOT_OWNED, f"{kind.kind} {name} exists but is not occ's: refusing to adopt it"
        )


def deleting(obj: Mapping[str, Any]) -> bool:
    return metadata(obj).get("deletionTimestamp") is not None


class Steps:
    """The ensure and teardown steps, each checking the operation before it writes."""

    def __init__(self, api: client.KubernetesApi) -> None:
        self.api = api

    def applied(
        self,
        operation: base.Operation,
        kind: kinds.Kind,
        namespace: str | None,
        desired: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The object converged to ``desired`` (no write when it already is)."""
        operation.check()
        meta = desired["metadata"]
        current = self.owned(kind, namespace, meta["name"], meta["labels"])
        if current is not None and contains(current, desired):
            return current
        operation.check()
        return self.api.apply(kind, namespace, desired)

    def created(
        self,
        operation: base.Operation,
        kind: kinds.Kind,
        namespace: str | None,
        desired: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The object, created from ``desired`` when absent (never changed once it exists)."""
        operation.check()
        name = desired["metadata"]["name"]
        current = self.api.read(kind, namespace, name)
        if current is None:
            operation.check()
            created = self.api.create(kind, namespace, desired)
            if created is not None:
                return created
            current = self.api.read(kind, namespace, name)  # created meanwhile (409)
            if current is None:
                raise base.TransientDriverError(
                    failures.CONFLICT, f"{kind.kind} {name} appeared and vanished meanwhile"
                )
        require_owned(kind, current, desired["metadata"]["labels"])
        return current

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        name: str,
        expected: Mapping[str, str],
    ) -> dict[str, Any] | None:
        """The object if it exists (refused when it is not occ's)."""
        current = self.api.read(kind, namespace, name)
        if current is not None:
            require_owned(kind, current, expected)
        return current

    def deleted(
        self, operation: base.Operation, kind: kinds.Kind, namespace: str, obj: Mapping[str, Any]
    ) -> None:
        """Delete ``obj`` under its uid (already deleting: nothing to do)."""
        if deleting(obj):
            return
        operation.check()
        meta = metadata(obj)
        self.api.delete(kind, namespace, str(meta.get("name")), str(meta.get("uid")))

    def delete_all(
        self,
        operation: base.Operation,
        of_kinds: Sequence[kinds.Kind],
        namespace: str,
        selector: str,
    ) -> int:
        """Delete every object of ``of_kinds`` matching ``selector``; how many were still
        there."""
        remaining = 0
        for kind in of_kinds:
            operation.check()
            for obj in self.api.find(kind, namespace, selector):
                if labels_of(obj).get(naming.MANAGED_BY) != naming.MANAGER:
                    continue  # a selector always names occ's label; never touch others'
                remaining += 1
                self.deleted(operation, kind, namespace, obj)
        return remaining
