"""IAM policy use cases: Roles, access bindings and restrictions (create, read, list, remove).

Every use case needs ``installation:administer`` on the Installation and runs authorization,
state and audit in one transaction (``admission.guarded``). Roles are soft-deleted, bindings
revoked, restrictions deleted. A change that would leave no principal able to administer the
Installation (deleting a Role, revoking a binding, adding a restriction) is refused with a
conflict, so the API can never lock every administrator out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import orm

from occ import errors, iam, ids
from occ.controller import admission, installation
from occ.controller import namespaces as namespace_cases
from occ.db import Database
from occ.state import audit, iam_policy, models

PERMISSION: Final = "installation:administer"
"""What every IAM administration use case needs, on the Installation."""

_RESOURCE_TABLES: Final[Mapping[str, Any]] = {
    "configuration": models.Configuration,
    "secret": models.Secret,
    "agent": models.Agent,
    "agent_revision": models.AgentRevision,
}

# serializes the changes that can take administration away, so two of them racing cannot
# each leave the other's administrator as the last one and then remove it
_ADMINISTRATORS_LOCK: Final = sa.text(
    "SELECT pg_advisory_xact_lock(hashtext('occ.iam.installation-administrators'))"
)


@dataclass(frozen=True, kw_only=True)
class RoleView:
    """A Role as callers see it; ``deleted_at`` is set once it was deleted."""

    id: str
    name: str
    namespace_id: str | None
    permissions: tuple[str, ...]
    created_at: dt.datetime
    deleted_at: dt.datetime | None


@dataclass(frozen=True)
class ResourceRef:
    """The exact resource a binding is limited to."""

    kind: str
    id: str


@dataclass(frozen=True, kw_only=True)
class AccessBindingView:
    """An access binding as callers see it; ``revoked_at`` is set once it was revoked."""

    id: str
    role_id: str
    principal_id: str
    namespace_id: str | None
    resource: ResourceRef | None
    created_by: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None


@dataclass(frozen=True, kw_only=True)
class RestrictionView:
    """A deny rule as callers see it."""

    id: str
    permission: str
    principal_id: str | None
    namespace_id: str | None
    resource_id: str | None
    created_by: str
    created_at: dt.datetime


# -- roles --------------------------------------------------------------------------------------


def create_role(
    db: Database,
    *,
    actor_id: str,
    name: str,
    permissions: Sequence[str],
    namespace_id: str | None = None,
) -> RoleView:
    """Create a Role holding ``permissions`` (Installation-wide, or of one Namespace).

    Raises:
        InvalidInput: a bad ``/name``, ``/namespaceId``, or ``/permissions/<index>`` (unknown,
            or not allowed in a Namespace Role).
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: a live Role has this name in this scope, or the Namespace is being deleted.
    """
    name = admission.name(name, "/name")
    optional_id("namespace", namespace_id, "/namespaceId")
    if not isinstance(permissions, list | tuple):
        raise errors.InvalidInput.at("/permissions", "must be a list of permissions")
    checked = iam.check_permissions(permissions, namespace_scoped=namespace_id is not None)
    request = {"name": name, "permissions": list(checked), "namespaceId": namespace_id}
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "roles.create", request)
        if namespace_id is not None:
            open_namespace(session, namespace_id)
        role = iam_policy.create_role(
            session, name=name, permissions=checked, namespace_id=namespace_id
        )
        _audit(
            session,
            "roles.create",
            actor_id,
            resource=("role", role.id),
            namespace_id=namespace_id,
            details={**admission.present(request), "authorization": decision.evidence.as_details()},
        )
        return role_view(role)


def get_role(db: Database, *, actor_id: str, role_id: str) -> RoleView:
    """A Role, deleted or not.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("role", role_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "roles.read")
        return role_view(_role(session, role_id))


def list_roles(db: Database, *, actor_id: str) -> list[RoleView]:
    """The live Roles in creation order."""
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "roles.list")
        return [role_view(role) for role in iam_policy.list_roles(session)]


def delete_role(db: Database, *, actor_id: str, role_id: str) -> RoleView:
    """Soft-delete a Role: its bindings stop granting. A repeat changes nothing.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: no principal would be left able to administer the Installation.
    """
    _known("role", role_id)
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "roles.delete")
        session.execute(_ADMINISTRATORS_LOCK)
        role = _role(session, role_id)
        if role.deleted_at is not None:
            return role_view(role)
        deleted = iam_policy.delete_role(session, role_id)
        assert deleted is not None  # it existed a moment ago and rows are never removed
        keep_an_administrator(session)
        _audit(
            session,
            "roles.delete",
            actor_id,
            resource=("role", role.id),
            namespace_id=role.namespace_id,
            details={"name": role.name, "authorization": decision.evidence.as_details()},
        )
        return role_view(deleted)


# -- access bindings ----------------------------------------------------------------------------


def create_binding(
    db: Database,
    *,
    actor_id: str,
    role_id: str,
    principal_id: str,
    namespace_id: str | None = None,
    resource: Mapping[str, Any] | None = None,
) -> AccessBindingView:
    """Grant a live Role to a principal Installation-wide, in a Namespace, or on one resource.

    ``resource`` (``{kind, id}``) limits the binding to that exact resource; it needs the
    resource's ``namespace_id`` unless it is the Installation (no Namespace) or a Namespace
    (its own).

    Raises:
        InvalidInput: a malformed ``/roleId``, ``/principalId``, ``/namespaceId``,
            ``/resource/kind`` or ``/resource/id``, or a scope that does not fit.
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Role (live), principal, Namespace or resource does not exist.
        Conflict: the Namespace is being deleted.
    """
    ids.require("role", role_id, "/roleId")
    ids.require("principal", principal_id, "/principalId")
    optional_id("namespace", namespace_id, "/namespaceId")
    target = _resource_ref(resource)
    if target is not None:
        namespace_id = _scope_of(target, namespace_id)
    request = {
        "roleId": role_id,
        "principalId": principal_id,
        "namespaceId": namespace_id,
        "resource": None if target is None else {"kind": target.kind, "id": target.id},
    }
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "access_bindings.create", request)
        if namespace_id is not None:
            open_namespace(session, namespace_id)
        if target is not None:
            _require_resource(session, target, namespace_id)
        principal = iam_policy.get_principal(session, principal_id)
        if principal is None:
            raise errors.NotFound("the principal does not exist")
        if principal.namespace_id is not None and principal.namespace_id != namespace_id:
            raise errors.InvalidInput.at(
                "/principalId", "a Namespace principal is bound only in its own Namespace"
            )
        binding = iam_policy.bind(
            session,
            role_id=role_id,
            principal_id=principal_id,
            created_by=actor_id,
            namespace_id=namespace_id,
            resource_kind=None if target is None else target.kind,
            resource_id=None if target is None else target.id,
        )
        _audit(
            session,
            "access_bindings.create",
            actor_id,
            resource=("access_binding", binding.id),
            namespace_id=namespace_id,
            details={**admission.present(request), "authorization": decision.evidence.as_details()},
        )
        return binding_view(binding)


def get_binding(db: Database, *, actor_id: str, binding_id: str) -> AccessBindingView:
    """An access binding, revoked or not.

    Raises:
        NotFound: no binding has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("access_binding", binding_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "access_bindings.read")
        return binding_view(_binding(session, binding_id))


def list_bindings(db: Database, *, actor_id: str) -> list[AccessBindingView]:
    """The live (unrevoked) bindings in creation order."""
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "access_bindings.list")
        return [binding_view(binding) for binding in iam_policy.list_bindings(session)]


def revoke_binding(db: Database, *, actor_id: str, binding_id: str) -> AccessBindingView:
    """Revoke a binding; a repeat changes nothing.

    Raises:
        NotFound: no binding has this id.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: no principal would be left able to administer the Installation.
    """
    _known("access_binding", binding_id)
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "access_bindings.revoke")
        session.execute(_ADMINISTRATORS_LOCK)
        binding = _binding(session, binding_id)
        if binding.revoked_at is not None:
            return binding_view(binding)
        revoked = iam_policy.revoke_binding(session, binding_id)
        assert revoked is not None  # it existed a moment ago and rows are never removed
        keep_an_administrator(session)
        _audit(
            session,
            "access_bindings.revoke",
            actor_id,
            resource=("access_binding", binding.id),
            namespace_id=binding.namespace_id,
            details={
                "roleId": binding.role_id,
                "principalId": binding.principal_id,
                "authorization": decision.evidence.as_details(),
            },
        )
        return binding_view(revoked)


# -- restrictions -------------------------------------------------------------------------------


def create_restriction(
    db: Database,
    *,
    actor_id: str,
    permission: str,
    principal_id: str | None = None,
    namespace_id: str | None = None,
    resource_id: str | None = None,
) -> RestrictionView:
    """Add a deny rule for ``permission``; the optional fields narrow it (unset: everything).

    Raises:
        InvalidInput: an unknown ``/permission``, a malformed ``/principalId``,
            ``/namespaceId`` or ``/resourceId``.
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the principal or the Namespace does not exist.
        Conflict: no principal would be left able to administer the Installation.
    """
    if not iam.is_permission(permission):
        raise errors.InvalidInput.at("/permission", "is not a known permission")
    optional_id("principal", principal_id, "/principalId")
    optional_id("namespace", namespace_id, "/namespaceId")
    if resource_id is not None and not any(
        ids.is_valid(kind, resource_id) for kind in sorted(iam.RESOURCE_KINDS)
    ):
        raise errors.InvalidInput.at("/resourceId", "must be the id of a resource")
    request = {
        "permission": permission,
        "principalId": principal_id,
        "namespaceId": namespace_id,
        "resourceId": resource_id,
    }
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "restrictions.create", request)
        if permission == PERMISSION:
            session.execute(_ADMINISTRATORS_LOCK)
        if principal_id is not None and iam_policy.get_principal(session, principal_id) is None:
            raise errors.NotFound("the principal does not exist")
        if namespace_id is not None:
            namespace_cases.live(session, namespace_id)
        restriction = iam_policy.create_restriction(
            session,
            permission=permission,
            created_by=actor_id,
            principal_id=principal_id,
            namespace_id=namespace_id,
            resource_id=resource_id,
        )
        if permission == PERMISSION:
            keep_an_administrator(session)
        _audit(
            session,
            "restrictions.create",
            actor_id,
            resource=("restriction", restriction.id),
            namespace_id=namespace_id,
            details={**admission.present(request), "authorization": decision.evidence.as_details()},
        )
        return restriction_view(restriction)


def get_restriction(db: Database, *, actor_id: str, restriction_id: str) -> RestrictionView:
    """A restriction.

    Raises:
        NotFound: no restriction has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("restriction", restriction_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "restrictions.read")
        return restriction_view(_restriction(session, restriction_id))


def list_restrictions(db: Database, *, actor_id: str) -> list[RestrictionView]:
    """Every restriction in creation order."""
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, "restrictions.list")
        return [restriction_view(rule) for rule in iam_policy.list_restrictions(session)]


def delete_restriction(db: Database, *, actor_id: str, restriction_id: str) -> RestrictionView:
    """Remove a restriction and return what it was.

    Raises:
        NotFound: no restriction has this id (also when it was already removed).
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("restriction", restriction_id)
    with admission.guarded(db, actor_id) as session:
        decision = administer(session, actor_id, "restrictions.delete")
        restriction = _restriction(session, restriction_id)
        if not iam_policy.delete_restriction(session, restriction_id):
            raise errors.NotFound("the restriction does not exist")
        _audit(
            session,
            "restrictions.delete",
            actor_id,
            resource=("restriction", restriction.id),
            namespace_id=restriction.namespace_id,
            details={
                "permission": restriction.permission,
                **admission.present(
                    {"principalId": restriction.principal_id, "resourceId": restriction.resource_id}
                ),
                "authorization": decision.evidence.as_details(),
            },
        )
        return restriction_view(restriction)


# -- shared with the principal use cases --------------------------------------------------------


def administer(
    session: orm.Session, actor_id: str, action: str, request: Mapping[str, Any] | None = None
) -> iam.Decision:
    """The decision allowing ``installation:administer`` on the Installation, or ``Denied``.

    The Installation is never hidden: a caller without the permission is answered 403, as by
    ``GET /v1/installation``.
    """
    target = iam.Resource.installation(installation.current(session).id)
    return admission.require(session, actor_id, action, PERMISSION, target, request=request)


def open_namespace(session: orm.Session, namespace_id: str) -> None:
    """Lock a live Namespace that is not being deleted, for a new IAM row that names it.

    Raises:
        NotFound: no live Namespace has this id.
        Conflict: the Namespace is being deleted.
    """
    namespace = namespace_cases.live(session, namespace_id, lock=True)
    if namespace.status == "deleting":
        raise errors.Conflict("the Namespace is being deleted")


def optional_id(kind: str, value: object, pointer: str) -> None:
    """``InvalidInput`` at ``pointer`` unless ``value`` is ``None`` or an id of ``kind``."""
    if value is not None:
        ids.require(kind, value, pointer)


def keep_an_administrator(session: orm.Session) -> None:
    """``Conflict`` unless some principal may still administer the Installation.

    Run after the change, in its transaction, holding the administrators lock.
    """
    target = iam.Resource.installation(installation.current(session).id)
    binding, role = models.AccessBinding, models.Role
    candidates = session.scalars(
        sa.select(binding.principal_id)
        .distinct()
        .join(role, role.id == binding.role_id)
        .where(
            binding.revoked_at.is_(None),
            role.deleted_at.is_(None),
            role.permissions.contains([PERMISSION]),
        )
        .order_by(binding.principal_id)
    ).all()
    for principal_id in candidates:
        if iam.authorize(session, principal_id, PERMISSION, target).allowed:
            return
    raise errors.Conflict(
        "no principal would be left with installation:administer; grant it to another "
        "principal first"
    )


# -- helpers ------------------------------------------------------------------------------------


def _known(kind: str, value: str) -> None:
    if not ids.is_valid(kind, value):
        raise errors.NotFound(f"the {kind.replace('_', ' ')} does not exist")


def _role(session: orm.Session, role_id: str) -> iam_policy.Role:
    role = iam_policy.get_role(session, role_id)
    if role is None:
        raise errors.NotFound("the role does not exist")
    return role


def _binding(session: orm.Session, binding_id: str) -> iam_policy.AccessBinding:
    binding = iam_policy.get_binding(session, binding_id)
    if binding is None:
        raise errors.NotFound("the access binding does not exist")
    return binding


def _restriction(session: orm.Session, restriction_id: str) -> iam_policy.Restriction:
    restriction = iam_policy.get_restriction(session, restriction_id)
    if restriction is None:
        raise errors.NotFound("the restriction does not exist")
    return restriction


def _resource_ref(resource: Mapping[str, Any] | None) -> ResourceRef | None:
    if resource is None:
        return None
    if not isinstance(resource, Mapping):
        raise errors.InvalidInput.at("/resource", "must be an object {kind, id}")
    kind = resource.get("kind")
    if not isinstance(kind, str) or kind not in iam.RESOURCE_KINDS:
        raise errors.InvalidInput.at(
            "/resource/kind", "must be one of " + ", ".join(sorted(iam.RESOURCE_KINDS))
        )
    return ResourceRef(kind, ids.require(kind, resource.get("id"), "/resource/id"))


def _scope_of(target: ResourceRef, namespace_id: str | None) -> str | None:
    """The Namespace a resource binding is made in (checked against the one given)."""
    if target.kind == "installation":
        if namespace_id is not None:
            raise errors.InvalidInput.at("/namespaceId", "the Installation is in no Namespace")
        return None
    if target.kind == "namespace":
        if namespace_id not in (None, target.id):
            raise errors.InvalidInput.at(
                "/namespaceId", "a Namespace binding is made in that Namespace"
            )
        return target.id
    if namespace_id is None:
        raise errors.InvalidInput.at(
            "/namespaceId", f"a binding on a {target.kind} needs its Namespace"
        )
    return namespace_id


def _require_resource(session: orm.Session, target: ResourceRef, namespace_id: str | None) -> None:
    if target.kind == "installation":
        exists = installation.current(session).id == target.id
    elif target.kind == "namespace":
        exists = True  # open_namespace found it
    else:
        table = _RESOURCE_TABLES[target.kind]
        exists = bool(
            session.scalar(
                sa.select(
                    sa.exists().where(table.id == target.id, table.namespace_id == namespace_id)
                )
            )
        )
    if not exists:
        raise errors.NotFound(f"the {target.kind.replace('_', ' ')} does not exist")


def _audit(
    session: orm.Session,
    action: str,
    actor_id: str,
    *,
    resource: tuple[str, str],
    namespace_id: str | None,
    details: Mapping[str, Any],
) -> None:
    audit.append(
        session,
        kind="mutation",
        action=action,
        actor_id=actor_id,
        outcome="success",
        namespace_id=namespace_id,
        resource_kind=resource[0],
        resource_id=resource[1],
        details=details,
    )


def role_view(role: iam_policy.Role) -> RoleView:
    return RoleView(
        id=role.id,
        name=role.name,
        namespace_id=role.namespace_id,
        permissions=role.permissions,
        created_at=role.created_at,
        deleted_at=role.deleted_at,
    )


def binding_view(binding: iam_policy.AccessBinding) -> AccessBindingView:
    resource = (
        None
        if binding.resource_kind is None or binding.resource_id is None
        else ResourceRef(binding.resource_kind, binding.resource_id)
    )
    return AccessBindingView(
        id=binding.id,
        role_id=binding.role_id,
        principal_id=binding.principal_id,
        namespace_id=binding.namespace_id,
        resource=resource,
        created_by=binding.created_by,
        created_at=binding.created_at,
        revoked_at=binding.revoked_at,
    )


def restriction_view(restriction: iam_policy.Restriction) -> RestrictionView:
    return RestrictionView(
        id=restriction.id,
        permission=restriction.permission,
        principal_id=restriction.principal_id,
        namespace_id=restriction.namespace_id,
        resource_id=restriction.resource_id,
        created_by=restriction.created_by,
        created_at=restriction.created_at,
    )
