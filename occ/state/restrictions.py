"""Restriction rows: deny rules for one permission, optionally narrowed to a principal, a
Namespace or one resource; they beat every grant.

Takes the caller's session and never commits; decides nothing (``occ.iam`` evaluates). Unlike
principals, roles and bindings, restrictions are deleted outright.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import ids
from occ.state import keyset, models, rows

_RESTRICTIONS: Final = cast(sa.Table, models.Restriction.__table__)


@dataclass(frozen=True, kw_only=True)
class Restriction:
    """A deny rule for one permission, optionally narrowed to a principal, Namespace, resource."""

    id: str
    permission: str
    principal_id: str | None
    namespace_id: str | None
    resource_id: str | None
    created_by: str
    created_at: dt.datetime


_VALUES: Final = rows.Values(_RESTRICTIONS, Restriction)


def insert(
    session: orm.Session,
    *,
    permission: str,
    created_by: str,
    principal_id: str | None = None,
    namespace_id: str | None = None,
    resource_id: str | None = None,
) -> Restriction:
    """Insert a deny rule; ``None`` narrowing fields match everything."""
    return _VALUES.inserted(
        session,
        id=ids.new("restriction"),
        permission=permission,
        principal_id=principal_id,
        namespace_id=namespace_id,
        resource_id=resource_id,
        created_by=created_by,
    )


def get(session: orm.Session, restriction_id: str) -> Restriction | None:
    """The restriction, or ``None``."""
    return _VALUES.get(session, restriction_id)


def list_all(
    session: orm.Session,
    *,
    namespace_id: str | None = None,
    window: keyset.Window = keyset.EVERYTHING,
) -> list[Restriction]:
    """Restrictions in creation order, optionally those of one Namespace (those in
    ``window``)."""
    return _VALUES.window(session, window, *rows.given(_RESTRICTIONS, namespace_id=namespace_id))


def delete(session: orm.Session, restriction_id: str) -> bool:
    """Remove the restriction; whether it existed."""
    result = session.execute(
        sa.delete(_RESTRICTIONS)
        .where(_RESTRICTIONS.c.id == restriction_id)
        .returning(_RESTRICTIONS.c.id)
    )
    return result.first() is not None
