"""Role rows: named sets of ``kind:action`` permissions, Installation-wide or in a Namespace.

Takes the caller's session and never commits; the application role may not DELETE Roles, so
a deletion is soft (``deleted_at``) and the Role's bindings stop granting.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import errors, ids
from occ.state import keyset, models, rows

_ROLES: Final = cast(sa.Table, models.Role.__table__)


@dataclass(frozen=True, kw_only=True)
class Role:
    """A named set of ``kind:action`` permissions; Namespace-scoped when ``namespace_id`` is set.

    ``deleted_at`` is set once it was (soft-)deleted.
    """

    id: str
    name: str
    namespace_id: str | None
    permissions: tuple[str, ...]
    created_at: dt.datetime
    deleted_at: dt.datetime | None


_VALUES: Final = rows.Values(_ROLES, Role, convert={"permissions": tuple})


def create_role(
    session: orm.Session, *, name: str, permissions: Sequence[str], namespace_id: str | None = None
) -> Role:
    """Insert a Role; permissions must already be checked against ``occ.iam``'s table.

    The CHECK constraint is the backstop for the permission table.

    Raises:
        Conflict: a live Role with this name exists in the same scope.
    """
    statement = _VALUES.insert(
        id=ids.new("role"),
        name=name,
        namespace_id=namespace_id,
        permissions=sorted(set(permissions)),
    ).on_conflict_do_nothing()
    role = _VALUES.returned(session, statement)
    if role is None:
        raise errors.Conflict("a role with this name already exists")
    return role


def get_role(session: orm.Session, role_id: str) -> Role | None:
    """The Role, deleted or not, or ``None``."""
    return _VALUES.get(session, role_id)


def find_role(session: orm.Session, *, name: str, namespace_id: str | None = None) -> Role | None:
    """The live Role with this name in this scope, or ``None``."""
    role = _ROLES.c
    return _VALUES.find(
        session,
        role.name == name,
        role.deleted_at.is_(None),
        role.namespace_id.is_(None) if namespace_id is None else role.namespace_id == namespace_id,
    )


def list_roles(
    session: orm.Session,
    *,
    include_deleted: bool = False,
    window: keyset.Window = keyset.EVERYTHING,
) -> list[Role]:
    """Roles in creation order (those in ``window``)."""
    live = () if include_deleted else (_ROLES.c.deleted_at.is_(None),)
    return _VALUES.window(session, window, *live)


def delete_role(session: orm.Session, role_id: str) -> Role | None:
    """Soft-delete the Role (idempotent); its bindings stop granting. ``None`` if missing."""
    return _VALUES.stamp(session, role_id, "deleted_at")
