"""Namespace use cases: create, delete (with retry and audited takeover), read and list.

A change takes its command value (``CreateNamespace``, ``DeleteNamespace``). They return
``occ.state.namespaces.Namespace`` values (live ones only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ import iam
from occ.controller import admission, deletions, installation, listing, preconditions
from occ.foundation import errors, ids
from occ.state import keyset, namespaces, values, work_keys, work_queue
from occ.state.db import Database, Session

_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True, kw_only=True)
class CreateNamespace:
    """A new Namespace: its name and, to adopt one, an existing Kubernetes namespace."""

    name: str
    existing_namespace: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteNamespace:
    """The deletion of a Namespace, if it still has the version ``if_match`` admits."""

    namespace_id: str
    if_match: preconditions.Expected | None = None


def create_namespace(db: Database, actor_id: str, command: CreateNamespace) -> namespaces.Namespace:
    """Admit a Namespace: row ``provisioning`` + audit + work ``namespace:<id>:reconcile:ready``.

    Needs ``namespace:create`` on the Installation; adopting ``existing_namespace`` (a
    Kubernetes namespace, DNS-1123 label) also needs ``installation:administer``.

    Raises:
        InvalidInput: a bad ``name`` or ``existing_namespace``.
        Forbidden: the caller may not create (audited; nothing else written).
        Conflict: the name is taken, or the existing namespace is already adopted.
    """
    name = admission.name(command.name, ("name",))
    existing_namespace = command.existing_namespace
    if existing_namespace is not None and not _DNS_LABEL.fullmatch(existing_namespace):
        raise errors.InvalidInput.at(
            ("existing_namespace",), "must be a DNS-1123 label (lowercase, 1 to 63 characters)"
        )
    request = {"name": name, "existingNamespace": existing_namespace}
    action = "namespaces.create"
    with admission.guarded(db, actor_id) as session:
        parent = installation.resource(session)
        change = admission.permitted_change(
            session, actor_id, action, "namespace:create", parent, request=request
        )
        if existing_namespace is not None:
            admission.require(
                session, actor_id, action, "installation:administer", parent, request=request
            )
        namespace = namespaces.insert(
            session, name=name, created_by=actor_id, existing_namespace=existing_namespace
        )
        key = work_keys.namespace_ready(namespace.id)
        owner = values.WorkOwner(namespace_id=namespace.id, actor_id=actor_id)
        work_queue.enqueue(session, key, owner)
        details = {**admission.present(request), "status": namespace.status}
        change.audit("namespace", namespace.id, namespace.id, details, work_id=str(key))
        return namespace


def delete_namespace(db: Database, actor_id: str, command: DeleteNamespace) -> namespaces.Namespace:
    """Admit a Namespace deletion: status ``deleting`` + audit + work ``...:reconcile:deleted``.

    Needs ``namespace:delete`` on the Namespace. Repeating it while the deletion work is
    queued or claimed changes nothing. Once that work failed permanently, a repeat requeues
    it for the caller; a caller other than the original actor takes it over (audited with the
    previous actor).

    Raises:
        NotFound: no such live Namespace, or the caller may not read it.
        Forbidden: the caller may read but not delete it (audited).
        PreconditionFailed: ``if_match`` does not admit the locked Namespace's version.
        NamespaceNotEmpty: Agents, Configurations or Secrets remain.
    """
    with admission.guarded(db, actor_id) as session:
        namespace = live(session, command.namespace_id, lock=True)
        resource = iam.Resource.namespace(namespace.id)
        decision = admission.require(
            session,
            actor_id,
            "namespaces.delete",
            "namespace:delete",
            resource,
            hide_unless_readable=True,
        )
        preconditions.check(
            command.if_match, preconditions.tag(namespace.id, updated_at=namespace.updated_at)
        )
        remaining = namespaces.contents(session, namespace.id)
        if not remaining.empty:
            raise errors.NamespaceNotEmpty(
                f"the Namespace still holds {remaining.agents} agent(s), "
                f"{remaining.configurations} configuration(s) and {remaining.secrets} secret(s)"
            )
        deletion = deletions.Deletion(
            resource_kind="namespace",
            resource_id=namespace.id,
            key=work_keys.namespace_deleted(namespace.id),
            owner=values.WorkOwner(namespace_id=namespace.id, actor_id=actor_id),
            authorization=decision.evidence.as_details(),
            deleting=namespaces.NamespaceStatus.DELETING,
            requeue=namespaces.requeue_deletion,
            what="Namespace",
        )
        if namespace.status == namespaces.NamespaceStatus.DELETING:
            deletions.repeat(session, deletion)
            return namespace
        deleting = namespaces.mark_deleting(session, namespace.id)
        assert deleting is not None  # the row is locked and live
        deletions.admit(session, deletion, namespace.status)
        return deleting


def get_namespace(db: Database, actor_id: str, *, namespace_id: str) -> namespaces.Namespace:
    """A live Namespace (``namespace:read``).

    Raises:
        NotFound: no such live Namespace, or the caller may not read it (audited).
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        return readable(session, actor_id, "namespaces.read", namespace_id)


def list_namespaces(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[namespaces.Namespace]:
    """The live Namespaces the caller may read (``namespace:read`` per Namespace), the page
    ``window`` asks for."""
    with db.snapshot() as session:
        return listing.readable_page(
            session,
            actor_id,
            "namespace:read",
            resource_of=lambda namespace: iam.Resource.namespace(namespace.id),
            read=lambda rows: namespaces.list_live(session, rows),
            window=window,
        )


def readable(
    session: Session,
    actor_id: str,
    action: str,
    namespace_id: str,
    *,
    lock: bool = False,
    request: Mapping[str, Any] | None = None,
) -> namespaces.Namespace:
    """The live Namespace with this id, once ``namespace:read`` on it allowed ``action``;
    ``NotFound`` (a denial audited) when the caller may not read it."""
    namespace = live(session, namespace_id, lock=lock)
    admission.require(
        session,
        actor_id,
        action,
        "namespace:read",
        iam.Resource.namespace(namespace.id),
        hide_unless_readable=True,
        request=request,
    )
    return namespace


def live(session: Session, namespace_id: str, *, lock: bool = False) -> namespaces.Namespace:
    """The live Namespace with this id (``lock``: under its row lock), or ``NotFound`` (a
    malformed id before any query)."""
    return found_live(
        namespaces.get(session, namespace_id, lock=lock)
        if ids.is_valid("namespace", namespace_id)
        else None
    )


def found_live(namespace: namespaces.Namespace | None) -> namespaces.Namespace:
    """The Namespace a look-up found, or ``NotFound`` when it found none or a tombstone."""
    if namespace is None or not namespace.live:
        raise errors.NotFound("the namespace does not exist")
    return namespace
