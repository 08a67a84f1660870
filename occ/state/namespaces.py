"""Namespace rows: insert, read, lock, contents, and the status moves admission makes.

Takes the caller's session and never commits. Workers move status with compare-and-set
(``transition``) and finish a deletion with ``tombstone``.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import errors, ids
from occ.state import finalizers, keyset, models, rows

_NOW = sa.func.clock_timestamp()
_NAMESPACES: Final = cast(sa.Table, models.Namespace.__table__)
_GET: Final = sa.select(_NAMESPACES).where(_NAMESPACES.c.id == sa.bindparam("namespace_id"))
_AGENTS: Final = cast(sa.Table, models.Agent.__table__)
_CONFIGURATIONS: Final = cast(sa.Table, models.Configuration.__table__)
_SECRETS: Final = cast(sa.Table, models.Secret.__table__)
_BINDINGS: Final = cast(sa.Table, models.AccessBinding.__table__)
_ROLES: Final = cast(sa.Table, models.Role.__table__)


class NamespaceStatus(enum.StrEnum):
    """Where a Namespace is in its life: admitted, usable, failed to provision, going away."""

    PROVISIONING = "provisioning"
    READY = "ready"
    FAILED = "failed"
    DELETING = "deleting"


@dataclass(frozen=True, kw_only=True)
class Namespace:
    """A Namespace row; ``deleted_at`` marks a tombstone (hidden from public reads)."""

    id: str
    name: str
    existing_namespace: str | None
    status: NamespaceStatus
    created_by: str
    created_at: dt.datetime
    updated_at: dt.datetime
    deleted_at: dt.datetime | None

    @property
    def live(self) -> bool:
        return self.deleted_at is None


_VALUES: Final = rows.Values(_NAMESPACES, Namespace, convert={"status": NamespaceStatus})


@dataclass(frozen=True, kw_only=True)
class Contents:
    """How many resources a Namespace still holds."""

    agents: int
    configurations: int
    secrets: int

    @property
    def empty(self) -> bool:
        return self.agents == 0 and self.configurations == 0 and self.secrets == 0


def insert(
    session: orm.Session, *, name: str, created_by: str, existing_namespace: str | None = None
) -> Namespace:
    """A new Namespace, status ``provisioning``.

    Raises:
        Conflict: the name is taken (tombstones keep theirs), or the existing Kubernetes
            namespace is already adopted by a live Namespace.
    """
    statement = _VALUES.insert(
        id=ids.new("namespace"),
        name=name,
        created_by=created_by,
        existing_namespace=existing_namespace,
        status=NamespaceStatus.PROVISIONING,
    ).on_conflict_do_nothing()
    namespace = _VALUES.returned(session, statement)
    if namespace is not None:
        return namespace
    taken = session.execute(sa.select(sa.exists().where(_NAMESPACES.c.name == name))).scalar()
    if taken:
        raise errors.Conflict("a Namespace with this name already exists")
    raise errors.Conflict("the existing namespace is already adopted by another Namespace")


def get(
    session: orm.Session, namespace_id: str, *, lock: bool = False, shared: bool = False
) -> Namespace | None:
    """The Namespace (tombstoned or not), or ``None``.

    ``lock`` takes its row lock (``FOR UPDATE``); ``shared`` a shared one (``FOR SHARE``).
    """
    if not lock and not shared:  # the workers' reload: one statement built once
        row = session.execute(_GET, {"namespace_id": namespace_id}).mappings().first()
        return None if row is None else _VALUES.make(row)
    query = _VALUES.select(_NAMESPACES.c.id == namespace_id)
    return rows.first(session, query.with_for_update(read=not lock), _VALUES.make)


def of_columns(columns: Mapping[str, Any]) -> Namespace:
    """The Namespace of a row's columns read beside others (``starts``)."""
    return _VALUES.make(columns)


def list_live(session: orm.Session, window: keyset.Window = keyset.EVERYTHING) -> list[Namespace]:
    """Every Namespace that is not tombstoned, in creation order (those in ``window``)."""
    return _VALUES.window(session, window, _NAMESPACES.c.deleted_at.is_(None))


def contents(session: orm.Session, namespace_id: str) -> Contents:
    """Counts of the Agents, Configurations and Secrets left in the Namespace."""

    def count(table: sa.Table) -> sa.ScalarSelect[int]:
        return (
            sa.select(sa.func.count())
            .select_from(table)
            .where(table.c.namespace_id == namespace_id)
            .scalar_subquery()
        )

    row = session.execute(sa.select(count(_AGENTS), count(_CONFIGURATIONS), count(_SECRETS))).one()
    return Contents(agents=row[0], configurations=row[1], secrets=row[2])


def mark_deleting(session: orm.Session, namespace_id: str) -> Namespace | None:
    """Move a live Namespace to ``deleting``; ``None`` if it is missing or tombstoned."""
    statement = _live_update(namespace_id, status=NamespaceStatus.DELETING)
    return _VALUES.returned(session, statement)


def transition(session: orm.Session, namespace_id: str, *, expected: str, status: str) -> bool:
    """Compare-and-set the status of a live Namespace; False when it moved on."""
    statement = _live_update(
        namespace_id,
        _NAMESPACES.c.status == NamespaceStatus(expected),
        status=NamespaceStatus(status),
    )
    return rows.changed(session, statement)


def tombstone(session: orm.Session, namespace_id: str) -> bool:
    """Finish a deletion: the row stays (its name stays reserved) but reads hide it, and the
    Namespace's Roles and access bindings stop granting anything."""
    statement = _live_update(
        namespace_id, _NAMESPACES.c.status == NamespaceStatus.DELETING, deleted_at=_NOW
    )
    if not rows.changed(session, statement):
        return False
    session.execute(rows.stamped(_BINDINGS, "revoked_at", _BINDINGS.c.namespace_id == namespace_id))
    session.execute(rows.stamped(_ROLES, "deleted_at", _ROLES.c.namespace_id == namespace_id))
    return True


def _live_update(namespace_id: str, *where: sa.ColumnElement[bool], **values: Any) -> sa.Update:
    """The UPDATE that sets ``values`` (and ``updated_at``) on the Namespace with this id while
    it is live (not tombstoned) and ``where`` holds."""
    live = (_NAMESPACES.c.id == namespace_id, _NAMESPACES.c.deleted_at.is_(None))
    return rows.touched(_NAMESPACES, *live, *where, **values)


requeue_deletion: Final = finalizers.requeue_deletion
"""Requeue a permanently failed Namespace deletion (``session, work_id, actor_id``) for the
actor; False unless the item is ``failed_permanent`` and its Namespace is still deleting."""
