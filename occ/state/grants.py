"""The policy loader: a principal with its live grants and the restrictions that may apply.

One query per decision, per filtered list, or per principal and Namespace for a request that
decides several permissions there (``permission=None``); takes the caller's session, writes
nothing and decides nothing: ``occ.iam`` evaluates what this returns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import hot_statements, iam_policy, models, restrictions, rows

_ROLES: Final = cast(sa.Table, models.Role.__table__)
_BINDINGS: Final = cast(sa.Table, models.AccessBinding.__table__)

# serializes the changes that can take administration away, so two of them racing cannot
# each leave the other's administrator as the last one and then remove it
_ADMINISTRATORS_LOCK: Final = sa.text(
    "SELECT pg_advisory_xact_lock(hashtext('occ.iam.installation-administrators'))"
)


@dataclass(frozen=True, kw_only=True)
class Grant:
    """A live binding of the principal joined with its live Role, as authorization sees it."""

    binding_id: str
    role_id: str
    role_namespace_id: str | None
    permissions: tuple[str, ...]
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Everything ``occ.iam`` needs to decide one request of one principal."""

    principal: iam_policy.Principal
    grants: tuple[Grant, ...]
    restrictions: tuple[restrictions.Restriction, ...]


# One statement: the principal, its live grants and the restrictions on the permission (every
# permission when it is NULL; every resource of the Namespace when the resource id is NULL).
# The filters only narrow to a superset of what applies; occ.iam re-checks every rule.
_LOAD_POLICY = sa.text("""
    SELECT p.id, p.name, p.kind, p.namespace_id, p.agent_id, p.created_at, p.disabled_at,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object(
                 'binding_id', b.id, 'role_id', r.id, 'role_namespace_id', r.namespace_id,
                 'permissions', to_jsonb(r.permissions), 'namespace_id', b.namespace_id,
                 'resource_kind', b.resource_kind, 'resource_id', b.resource_id) ORDER BY b.id)
          FROM occ.access_bindings b JOIN occ.roles r ON r.id = b.role_id
         WHERE b.principal_id = p.id AND b.revoked_at IS NULL AND r.deleted_at IS NULL
           AND (CAST(:permission AS text) IS NULL
                OR CAST(:permission AS text) = ANY (r.permissions))
           AND (:everywhere OR b.namespace_id IS NULL
                OR b.namespace_id = CAST(:namespace_id AS text))
      ), '[]'::jsonb) AS grants,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object(
                 'id', x.id, 'permission', x.permission, 'principal_id', x.principal_id,
                 'namespace_id', x.namespace_id, 'resource_id', x.resource_id,
                 'created_by', x.created_by, 'created_at', x.created_at) ORDER BY x.id)
          FROM occ.restrictions x
         WHERE (CAST(:permission AS text) IS NULL OR x.permission = CAST(:permission AS text))
           AND (x.principal_id IS NULL OR x.principal_id = p.id)
           AND (:everywhere
                OR ((x.namespace_id IS NULL OR x.namespace_id = CAST(:namespace_id AS text))
                    AND (CAST(:resource_id AS text) IS NULL OR x.resource_id IS NULL
                         OR x.resource_id = CAST(:resource_id AS text))))
      ), '[]'::jsonb) AS restrictions
      FROM occ.principals p
     WHERE p.id = ANY (CAST(:principal_ids AS text[]))""")


_HOT: Final = hot_statements.compile_all({"load_policy": _LOAD_POLICY}, "load_policy")


def load_policy(
    target: hot_statements.Target,
    principal_id: str,
    *,
    permission: str | None,
    namespace_id: str | None = None,
    resource_id: str | None = None,
    everywhere: bool = False,
) -> Policy | None:
    """The principal with its grants and restrictions for ``permission``, in one query.

    Grants are live bindings (not revoked, Role not deleted) whose Role holds the permission;
    restrictions are those on the permission for this principal or everyone. Unless
    ``everywhere``, both are narrowed to what can apply to a resource with this id in this
    Namespace (any resource of it when ``resource_id`` is ``None``); ``everywhere`` loads them
    for every resource (to filter a list in one query). ``permission=None`` loads them for
    every permission. ``None`` when no principal has this id.
    """
    return load_policies(
        target,
        (principal_id,),
        permission=permission,
        namespace_id=namespace_id,
        resource_id=resource_id,
        everywhere=everywhere,
    ).get(principal_id)


def load_policies(
    target: hot_statements.Target,
    principal_ids: Collection[str],
    *,
    permission: str | None,
    namespace_id: str | None = None,
    resource_id: str | None = None,
    everywhere: bool = False,
) -> dict[str, Policy]:
    """``load_policy`` for several principals in one query, by principal id (an id no
    principal has is missing). A hot statement: every authorization decision runs it."""
    found = hot_statements.every(
        target,
        _HOT["load_policy"],
        {
            "principal_ids": list(principal_ids),
            "permission": permission,
            "namespace_id": namespace_id,
            "resource_id": resource_id,
            "everywhere": everywhere,
        },
    )
    policies = (_policy(row) for row in found)
    return {policy.principal.id: policy for policy in policies}


def _policy(row: Mapping[str, Any]) -> Policy:
    return Policy(
        principal=rows.record(
            iam_policy.Principal, row, kind=iam_policy.PrincipalKind(row["kind"])
        ),
        grants=tuple(_grant(item) for item in row["grants"]),
        restrictions=tuple(_loaded_restriction(item) for item in row["restrictions"]),
    )


def lock_administrators(session: orm.Session) -> None:
    """Take the transaction lock every change that can take administration away holds."""
    session.execute(_ADMINISTRATORS_LOCK)


def principals_holding(session: orm.Session, permission: str) -> list[str]:
    """Ids of the principals with a live binding to a live Role that lists ``permission``
    (at any scope; ``occ.iam`` decides what each may really do)."""
    binding, role = _BINDINGS.c, _ROLES.c
    query = (
        sa.select(binding.principal_id)
        .distinct()
        .join_from(_BINDINGS, _ROLES, role.id == binding.role_id)
        .where(
            binding.revoked_at.is_(None),
            role.deleted_at.is_(None),
            role.permissions.contains([permission]),
        )
        .order_by(binding.principal_id)
    )
    return list(session.execute(query).scalars())


def _grant(item: Mapping[str, Any]) -> Grant:
    return rows.record(Grant, item, permissions=tuple(item["permissions"]))


def _loaded_restriction(item: Mapping[str, Any]) -> restrictions.Restriction:
    return rows.record(
        restrictions.Restriction, item, created_at=dt.datetime.fromisoformat(item["created_at"])
    )
