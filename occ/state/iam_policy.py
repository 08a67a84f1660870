"""IAM policy rows: principals, roles, access bindings, restrictions, and the policy loader.

Takes the caller's session and never commits; decides nothing (``occ.iam`` evaluates). The
application role may not DELETE principals, roles or bindings: principals are disabled,
roles soft-deleted and bindings revoked; only restrictions are deleted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ import errors, ids
from occ.state import models

PRINCIPAL_KINDS: Final = frozenset({"human", "service"})
RESOURCE_KINDS: Final = frozenset(
    {"installation", "namespace", "configuration", "secret", "agent", "agent_revision"}
)

_NOW = sa.func.clock_timestamp()
_Query = TypeVar("_Query", bound=sa.Executable)


@dataclass(frozen=True, kw_only=True)
class Principal:
    """A human or service identity; Namespace-scoped when ``namespace_id`` is set."""

    id: str
    name: str
    kind: str
    namespace_id: str | None
    agent_id: str | None
    created_at: dt.datetime
    disabled_at: dt.datetime | None

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True, kw_only=True)
class Role:
    """A named set of ``kind:action`` permissions; Namespace-scoped when ``namespace_id`` is set."""

    id: str
    name: str
    namespace_id: str | None
    permissions: tuple[str, ...]
    created_at: dt.datetime
    deleted_at: dt.datetime | None


@dataclass(frozen=True, kw_only=True)
class AccessBinding:
    """A Role granted to a principal Installation-wide, in one Namespace, or on one resource."""

    id: str
    role_id: str
    principal_id: str
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None
    created_by: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None


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

    principal: Principal
    grants: tuple[Grant, ...]
    restrictions: tuple[Restriction, ...]


# -- principals ---------------------------------------------------------------------------------


def create_principal(
    session: orm.Session,
    *,
    name: str,
    kind: str,
    namespace_id: str | None = None,
    agent_id: str | None = None,
) -> Principal:
    """Insert a principal (``human`` or ``service``; Namespace-scoped if ``namespace_id``)."""
    if kind not in PRINCIPAL_KINDS:
        raise ValueError(f"unknown principal kind {kind!r}")
    statement = (
        sa.insert(models.Principal)
        .values(
            id=ids.new("principal"),
            name=name,
            kind=kind,
            namespace_id=namespace_id,
            agent_id=agent_id,
        )
        .returning(models.Principal)
    )
    return _principal(session.scalars(statement).one())


def get_principal(session: orm.Session, principal_id: str) -> Principal | None:
    """The principal, disabled or not, or ``None``."""
    row = session.scalars(
        _fresh(sa.select(models.Principal).where(models.Principal.id == principal_id))
    ).first()
    return None if row is None else _principal(row)


def disable_principal(session: orm.Session, principal_id: str) -> Principal | None:
    """Disable the principal (idempotent: keeps the first ``disabled_at``); ``None`` if missing."""
    session.execute(
        sa.update(models.Principal)
        .where(models.Principal.id == principal_id, models.Principal.disabled_at.is_(None))
        .values(disabled_at=_NOW)
        .execution_options(synchronize_session=False)
    )
    return get_principal(session, principal_id)


# -- roles --------------------------------------------------------------------------------------


def create_role(
    session: orm.Session, *, name: str, permissions: Sequence[str], namespace_id: str | None = None
) -> Role:
    """Insert a Role; permissions must already be checked against ``occ.iam``'s table.

    The CHECK constraint is the backstop for the permission table.

    Raises:
        Conflict: a live Role with this name exists in the same scope.
    """
    statement = (
        pg.insert(models.Role)
        .values(
            id=ids.new("role"),
            name=name,
            namespace_id=namespace_id,
            permissions=sorted(set(permissions)),
        )
        .on_conflict_do_nothing()
        .returning(models.Role)
    )
    row = session.scalars(statement).first()
    if row is None:
        raise errors.Conflict("a role with this name already exists")
    return _role(row)


def get_role(session: orm.Session, role_id: str) -> Role | None:
    """The Role, deleted or not, or ``None``."""
    row = session.scalars(_fresh(sa.select(models.Role).where(models.Role.id == role_id))).first()
    return None if row is None else _role(row)


def find_role(session: orm.Session, *, name: str, namespace_id: str | None = None) -> Role | None:
    """The live Role with this name in this scope, or ``None``."""
    role = models.Role
    query = sa.select(role).where(role.name == name, role.deleted_at.is_(None))
    query = query.where(
        role.namespace_id.is_(None) if namespace_id is None else role.namespace_id == namespace_id
    )
    row = session.scalars(_fresh(query)).first()
    return None if row is None else _role(row)


def list_roles(session: orm.Session, *, include_deleted: bool = False) -> list[Role]:
    """Roles in creation order."""
    query = sa.select(models.Role).order_by(models.Role.created_at, models.Role.id)
    if not include_deleted:
        query = query.where(models.Role.deleted_at.is_(None))
    return [_role(row) for row in session.scalars(_fresh(query))]


def delete_role(session: orm.Session, role_id: str) -> Role | None:
    """Soft-delete the Role (idempotent); its bindings stop granting. ``None`` if missing."""
    session.execute(
        sa.update(models.Role)
        .where(models.Role.id == role_id, models.Role.deleted_at.is_(None))
        .values(deleted_at=_NOW)
        .execution_options(synchronize_session=False)
    )
    return get_role(session, role_id)


# -- access bindings ----------------------------------------------------------------------------


def bind(
    session: orm.Session,
    *,
    role_id: str,
    principal_id: str,
    created_by: str,
    namespace_id: str | None = None,
    resource_kind: str | None = None,
    resource_id: str | None = None,
) -> AccessBinding:
    """Grant a live Role to a principal at one scope.

    No namespace and no resource: Installation-wide. ``namespace_id`` alone: that Namespace.
    ``resource_kind`` + ``resource_id``: that exact resource (inside ``namespace_id`` unless
    the kind is ``installation``).

    Raises:
        NotFound: the Role (live) or the principal does not exist.
        InvalidInput: the scope is malformed, or a Namespace Role is bound outside its Namespace.
    """
    if (resource_kind is None) != (resource_id is None):
        raise errors.InvalidInput.at("/resourceId", "give both resource kind and id, or neither")
    if resource_kind is not None:
        if resource_kind not in RESOURCE_KINDS:
            raise errors.InvalidInput.at("/resourceKind", "unknown resource kind")
        if resource_kind == "installation" and namespace_id is not None:
            raise errors.InvalidInput.at("/namespaceId", "the installation is in no Namespace")
        if resource_kind != "installation" and namespace_id is None:
            raise errors.InvalidInput.at("/namespaceId", "a resource binding needs its Namespace")
        if resource_kind == "namespace" and resource_id != namespace_id:
            raise errors.InvalidInput.at("/resourceId", "a Namespace binding names its Namespace")
    role = get_role(session, role_id)
    if role is None or role.deleted_at is not None:
        raise errors.NotFound("the role does not exist")
    if get_principal(session, principal_id) is None:
        raise errors.NotFound("the principal does not exist")
    if role.namespace_id is not None and role.namespace_id != namespace_id:
        raise errors.InvalidInput.at("/roleId", "a Namespace role is bound only in its Namespace")
    statement = (
        sa.insert(models.AccessBinding)
        .values(
            id=ids.new("access_binding"),
            role_id=role_id,
            principal_id=principal_id,
            namespace_id=namespace_id,
            resource_kind=resource_kind,
            resource_id=resource_id,
            created_by=created_by,
        )
        .returning(models.AccessBinding)
    )
    return _binding(session.scalars(statement).one())


def get_binding(session: orm.Session, binding_id: str) -> AccessBinding | None:
    """The binding, revoked or not, or ``None``."""
    row = session.scalars(
        _fresh(sa.select(models.AccessBinding).where(models.AccessBinding.id == binding_id))
    ).first()
    return None if row is None else _binding(row)


def list_bindings(
    session: orm.Session,
    *,
    principal_id: str | None = None,
    role_id: str | None = None,
    namespace_id: str | None = None,
    include_revoked: bool = False,
) -> list[AccessBinding]:
    """Bindings matching every given filter, in creation order."""
    binding = models.AccessBinding
    query = sa.select(binding).order_by(binding.created_at, binding.id)
    if principal_id is not None:
        query = query.where(binding.principal_id == principal_id)
    if role_id is not None:
        query = query.where(binding.role_id == role_id)
    if namespace_id is not None:
        query = query.where(binding.namespace_id == namespace_id)
    if not include_revoked:
        query = query.where(binding.revoked_at.is_(None))
    return [_binding(row) for row in session.scalars(_fresh(query))]


def revoke_binding(session: orm.Session, binding_id: str) -> AccessBinding | None:
    """Revoke the binding (idempotent); ``None`` if missing."""
    session.execute(
        sa.update(models.AccessBinding)
        .where(models.AccessBinding.id == binding_id, models.AccessBinding.revoked_at.is_(None))
        .values(revoked_at=_NOW)
        .execution_options(synchronize_session=False)
    )
    return get_binding(session, binding_id)


# -- restrictions -------------------------------------------------------------------------------


def create_restriction(
    session: orm.Session,
    *,
    permission: str,
    created_by: str,
    principal_id: str | None = None,
    namespace_id: str | None = None,
    resource_id: str | None = None,
) -> Restriction:
    """Insert a deny rule; ``None`` narrowing fields match everything."""
    statement = (
        sa.insert(models.Restriction)
        .values(
            id=ids.new("restriction"),
            permission=permission,
            principal_id=principal_id,
            namespace_id=namespace_id,
            resource_id=resource_id,
            created_by=created_by,
        )
        .returning(models.Restriction)
    )
    return _restriction(session.scalars(statement).one())


def get_restriction(session: orm.Session, restriction_id: str) -> Restriction | None:
    """The restriction, or ``None``."""
    row = session.scalars(
        _fresh(sa.select(models.Restriction).where(models.Restriction.id == restriction_id))
    ).first()
    return None if row is None else _restriction(row)


def list_restrictions(
    session: orm.Session, *, namespace_id: str | None = None
) -> list[Restriction]:
    """Restrictions in creation order, optionally those of one Namespace."""
    query = sa.select(models.Restriction).order_by(
        models.Restriction.created_at, models.Restriction.id
    )
    if namespace_id is not None:
        query = query.where(models.Restriction.namespace_id == namespace_id)
    return [_restriction(row) for row in session.scalars(_fresh(query))]


def delete_restriction(session: orm.Session, restriction_id: str) -> bool:
    """Remove the restriction; whether it existed."""
    result = session.execute(
        sa.delete(models.Restriction)
        .where(models.Restriction.id == restriction_id)
        .returning(models.Restriction.id)
        .execution_options(synchronize_session=False)
    )
    return result.first() is not None


# -- the policy loader --------------------------------------------------------------------------

# One statement: the principal, its live grants and the restrictions on the permission. The
# filters only narrow to a superset of what applies; occ.iam re-checks every rule.
_LOAD_POLICY = sa.text("""
    SELECT p.id, p.name, p.kind, p.namespace_id, p.agent_id, p.created_at, p.disabled_at,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object(
                 'binding_id', b.id, 'role_id', r.id, 'role_namespace_id', r.namespace_id,
                 'permissions', to_jsonb(r.permissions), 'namespace_id', b.namespace_id,
                 'resource_kind', b.resource_kind, 'resource_id', b.resource_id) ORDER BY b.id)
          FROM occ.access_bindings b JOIN occ.roles r ON r.id = b.role_id
         WHERE b.principal_id = p.id AND b.revoked_at IS NULL AND r.deleted_at IS NULL
           AND CAST(:permission AS text) = ANY (r.permissions)
           AND (:everywhere OR b.namespace_id IS NULL
                OR b.namespace_id = CAST(:namespace_id AS text))
      ), '[]'::jsonb) AS grants,
      COALESCE((
        SELECT jsonb_agg(jsonb_build_object(
                 'id', x.id, 'permission', x.permission, 'principal_id', x.principal_id,
                 'namespace_id', x.namespace_id, 'resource_id', x.resource_id,
                 'created_by', x.created_by, 'created_at', x.created_at) ORDER BY x.id)
          FROM occ.restrictions x
         WHERE x.permission = CAST(:permission AS text)
           AND (x.principal_id IS NULL OR x.principal_id = p.id)
           AND (:everywhere
                OR ((x.namespace_id IS NULL OR x.namespace_id = CAST(:namespace_id AS text))
                    AND (x.resource_id IS NULL OR x.resource_id = CAST(:resource_id AS text))))
      ), '[]'::jsonb) AS restrictions
      FROM occ.principals p
     WHERE p.id = :principal_id""")


def load_policy(
    session: orm.Session,
    principal_id: str,
    *,
    permission: str,
    namespace_id: str | None = None,
    resource_id: str | None = None,
    everywhere: bool = False,
) -> Policy | None:
    """The principal with its grants and restrictions for ``permission``, in one query.

    Grants are live bindings (not revoked, Role not deleted) whose Role holds the permission;
    restrictions are those on the permission for this principal or everyone. Unless
    ``everywhere``, both are narrowed to what can apply to a resource with this id in this
    Namespace; ``everywhere`` loads them for every resource (to filter a list in one query).
    ``None`` when no principal has this id.
    """
    row = (
        session.execute(
            _LOAD_POLICY,
            {
                "principal_id": principal_id,
                "permission": permission,
                "namespace_id": namespace_id,
                "resource_id": resource_id,
                "everywhere": everywhere,
            },
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    return Policy(
        principal=Principal(
            id=row["id"],
            name=row["name"],
            kind=row["kind"],
            namespace_id=row["namespace_id"],
            agent_id=row["agent_id"],
            created_at=row["created_at"],
            disabled_at=row["disabled_at"],
        ),
        grants=tuple(_grant(item) for item in row["grants"]),
        restrictions=tuple(_loaded_restriction(item) for item in row["restrictions"]),
    )


# -- conversions --------------------------------------------------------------------------------


def _fresh(query: _Query) -> _Query:
    # rows updated earlier in the same session must be read back, not taken from the identity map
    return query.execution_options(populate_existing=True)


def _principal(row: models.Principal) -> Principal:
    return Principal(
        id=row.id,
        name=row.name,
        kind=row.kind,
        namespace_id=row.namespace_id,
        agent_id=row.agent_id,
        created_at=row.created_at,
        disabled_at=row.disabled_at,
    )


def _role(row: models.Role) -> Role:
    return Role(
        id=row.id,
        name=row.name,
        namespace_id=row.namespace_id,
        permissions=tuple(row.permissions),
        created_at=row.created_at,
        deleted_at=row.deleted_at,
    )


def _binding(row: models.AccessBinding) -> AccessBinding:
    return AccessBinding(
        id=row.id,
        role_id=row.role_id,
        principal_id=row.principal_id,
        namespace_id=row.namespace_id,
        resource_kind=row.resource_kind,
        resource_id=row.resource_id,
        created_by=row.created_by,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def _restriction(row: models.Restriction) -> Restriction:
    return Restriction(
        id=row.id,
        permission=row.permission,
        principal_id=row.principal_id,
        namespace_id=row.namespace_id,
        resource_id=row.resource_id,
        created_by=row.created_by,
        created_at=row.created_at,
    )


def _grant(item: Mapping[str, Any]) -> Grant:
    return Grant(
        binding_id=item["binding_id"],
        role_id=item["role_id"],
        role_namespace_id=item["role_namespace_id"],
        permissions=tuple(item["permissions"]),
        namespace_id=item["namespace_id"],
        resource_kind=item["resource_kind"],
        resource_id=item["resource_id"],
    )


def _loaded_restriction(item: Mapping[str, Any]) -> Restriction:
    return Restriction(
        id=item["id"],
        permission=item["permission"],
        principal_id=item["principal_id"],
        namespace_id=item["namespace_id"],
        resource_id=item["resource_id"],
        created_by=item["created_by"],
        created_at=dt.datetime.fromisoformat(item["created_at"]),
    )
