"""Access-binding use cases: grant a Role to a principal at a scope, read, list, revoke.

They follow the rules of every IAM administration use case (``occ.controller.policy``); a
revocation is what could leave nobody able to administer the Installation. A change takes its
command value (``CreateBinding``, ``RevokeBinding``). They return
``occ.state.iam_policy.AccessBinding`` values.
"""

from __future__ import annotations

from dataclasses import dataclass

from occ.controller import installation, policy
from occ.foundation import errors, ids
from occ.state import iam_policy, keyset
from occ.state.db import Database, Session


@dataclass(frozen=True, kw_only=True)
class CreateBinding:
    """A Role granted to a principal Installation-wide, in a Namespace, or on one resource."""

    role_id: str
    principal_id: str
    namespace_id: str | None = None
    resource: iam_policy.ResourceRef | None = None


@dataclass(frozen=True, kw_only=True)
class RevokeBinding:
    """Revoking an access binding."""

    binding_id: str


def create_binding(db: Database, actor_id: str, command: CreateBinding) -> iam_policy.AccessBinding:
    """Grant a live Role to a principal Installation-wide, in a Namespace, or on one resource.

    ``resource`` limits the binding to that exact resource; it needs the resource's
    ``namespace_id`` unless it is the Installation (no Namespace) or a Namespace (its own).

    Raises:
        InvalidInput: a malformed ``role_id``, ``principal_id``, ``namespace_id``,
            ``resource`` kind or id, or a scope that does not fit.
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Role (live), principal, Namespace or resource does not exist.
        Conflict: the Namespace is being deleted.
    """
    role_id, principal_id = command.role_id, command.principal_id
    namespace_id = command.namespace_id
    ids.require("role", role_id, ("role_id",))
    ids.require("principal", principal_id, ("principal_id",))
    policy.optional_id("namespace", namespace_id, ("namespace_id",))
    target = None if command.resource is None else policy.resource_input(command.resource)
    if target is not None:
        namespace_id = _scope_of(target, namespace_id)
    request = {
        "roleId": role_id,
        "principalId": principal_id,
        "namespaceId": namespace_id,
        "resource": None if target is None else {"kind": target.kind, "id": target.id},
    }

    def bind(session: Session) -> iam_policy.AccessBinding:
        if target is not None:
            _require_resource(session, target, namespace_id)
        principal = policy.principal(session, principal_id)
        if principal.namespace_id is not None and principal.namespace_id != namespace_id:
            raise errors.InvalidInput.at(
                ("principal_id",), "a Namespace principal is bound only in its own Namespace"
            )
        return iam_policy.bind(
            session,
            role_id=role_id,
            principal_id=principal_id,
            created_by=actor_id,
            namespace_id=namespace_id,
            resource_kind=None if target is None else target.kind,
            resource_id=None if target is None else target.id,
        )

    return policy.administered_create(db, actor_id, "access_binding", request, bind)


def get_binding(db: Database, actor_id: str, binding_id: str) -> iam_policy.AccessBinding:
    """An access binding, revoked or not.

    Raises:
        NotFound: no binding has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    return policy.administered_get(
        db, actor_id, "access_binding", binding_id, iam_policy.get_binding
    )


def list_bindings(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[iam_policy.AccessBinding]:
    """The live (unrevoked) bindings in creation order, the page ``window`` asks for."""
    return policy.administered_page(
        db, actor_id, "access_bindings.list", iam_policy.list_bindings, window
    )


def revoke_binding(db: Database, actor_id: str, command: RevokeBinding) -> iam_policy.AccessBinding:
    """Revoke a binding; a repeat changes nothing.

    Raises:
        NotFound: no binding has this id.
        Forbidden: the caller may not administer the Installation (audited).
        LastAdministrator: no principal that can sign in would be left able to administer the
            Installation (audited; nothing changed).
    """
    return policy.administered_revoke(
        db,
        actor_id,
        "access_binding",
        command.binding_id,
        action="access_bindings.revoke",
        request={"bindingId": command.binding_id},
        get=iam_policy.get_binding,
        revoke=iam_policy.revoke_binding,
        revoked=lambda binding: binding.revoked_at is not None,
        details=lambda binding: {"roleId": binding.role_id, "principalId": binding.principal_id},
    )


def _scope_of(target: iam_policy.ResourceRef, namespace_id: str | None) -> str | None:
    """The Namespace a resource binding is made in (checked against the one given)."""
    if target.kind == "installation":
        if namespace_id is not None:
            raise errors.InvalidInput.at(("namespace_id",), "the Installation is in no Namespace")
        return None
    if target.kind == "namespace":
        if namespace_id not in (None, target.id):
            raise errors.InvalidInput.at(
                ("namespace_id",), "a Namespace binding is made in that Namespace"
            )
        return target.id
    if namespace_id is None:
        raise errors.InvalidInput.at(
            ("namespace_id",), f"a binding on a {target.kind} needs its Namespace"
        )
    return namespace_id


def _require_resource(
    session: Session, target: iam_policy.ResourceRef, namespace_id: str | None
) -> None:
    if target.kind == "installation":
        exists = installation.current(session).id == target.id
    elif target.kind == "namespace":
        exists = True  # open_namespace found it
    else:
        assert namespace_id is not None  # _scope_of requires it for these kinds
        exists = iam_policy.resource_exists(session, target.kind, target.id, namespace_id)
    if not exists:
        raise errors.NotFound(f"the {target.kind.replace('_', ' ')} does not exist")
