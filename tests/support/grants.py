"""Give a principal permissions in one call: a fresh Role plus one binding at the asked scope."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import orm

from occ.foundation import ids
from occ.state import iam_policy
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.support import rows

Scope = dict[str, str | None]
"""Where a binding applies, as ``grant``'s keyword arguments."""


def exactly(namespace_id: str | None, kind: str, resource_id: str) -> Scope:
    """The scope of a binding on the one resource ``kind`` ``resource_id`` (in ``namespace_id``)."""
    return {"namespace_id": namespace_id, "resource_kind": kind, "resource_id": resource_id}


def grant(
    session: orm.Session,
    principal_id: str,
    permissions: Sequence[str],
    *,
    namespace_id: str | None = None,
    resource_kind: str | None = None,
    resource_id: str | None = None,
    role_namespace_id: str | None = None,
) -> iam_policy.AccessBinding:
    """Bind a new Role holding ``permissions`` to the principal (Installation-wide by default)."""
    role = role_rows.create_role(
        session,
        name=f"role {ids.new('role')}",
        permissions=permissions,
        namespace_id=role_namespace_id,
    )
    return iam_policy.bind(
        session,
        role_id=role.id,
        principal_id=principal_id,
        created_by=principal_id,
        namespace_id=namespace_id,
        resource_kind=resource_kind,
        resource_id=resource_id,
    )


def give(
    db: Database, principal_id: str, permissions: Sequence[str], **scope: str | None
) -> iam_policy.AccessBinding:
    """``grant`` in a transaction of its own."""
    with db.transaction() as session:
        return grant(session, principal_id, permissions, **scope)


def principal(
    db: Database,
    *permissions: str,
    namespace_id: str | None = None,
    resource_kind: str | None = None,
    resource_id: str | None = None,
) -> str:
    """A new human principal holding ``permissions`` (if any) at the scope asked; its id."""
    with db.transaction() as session:
        principal_id = rows.principal(session)
        if permissions:
            grant(
                session,
                principal_id,
                permissions,
                namespace_id=namespace_id,
                resource_kind=resource_kind,
                resource_id=resource_id,
            )
        return principal_id
