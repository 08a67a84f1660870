"""Restriction use cases: add, read, list and remove deny rules (``occ.state.restrictions``).

They follow the rules of every IAM administration use case (``occ.controller.policy``); an
added restriction of ``installation:administer`` is what could leave nobody able to
administer the Installation. A change takes its command value (``CreateRestriction``,
``DeleteRestriction``).
"""

from __future__ import annotations

from dataclasses import dataclass

from occ import iam
from occ.controller import admission, policy
from occ.controller import namespaces as namespace_cases
from occ.foundation import errors, ids
from occ.state import grants, keyset
from occ.state import restrictions as state
from occ.state.db import Database


@dataclass(frozen=True, kw_only=True)
class CreateRestriction:
    """A deny rule for ``permission``; each optional field narrows it (unset: everything)."""

    permission: str
    principal_id: str | None = None
    namespace_id: str | None = None
    resource_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteRestriction:
    """Removing a restriction."""

    restriction_id: str


def create_restriction(
    db: Database, actor_id: str, command: CreateRestriction
) -> state.Restriction:
    """Add a deny rule for ``permission``; the optional fields narrow it (unset: everything).

    Raises:
        InvalidInput: an unknown ``permission``, a malformed ``principal_id``,
            ``namespace_id`` or ``resource_id``.
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the principal or the Namespace does not exist.
        LastAdministrator: no principal that can sign in would be left able to administer the
            Installation (audited; nothing changed).
    """
    permission, principal_id = command.permission, command.principal_id
    namespace_id, resource_id = command.namespace_id, command.resource_id
    if not iam.is_permission(permission):
        raise errors.InvalidInput.at(("permission",), "is not a known permission")
    policy.optional_id("principal", principal_id, ("principal_id",))
    policy.optional_id("namespace", namespace_id, ("namespace_id",))
    if resource_id is not None and not any(
        ids.is_valid(kind, resource_id) for kind in sorted(iam.RESOURCE_KINDS)
    ):
        raise errors.InvalidInput.at(("resource_id",), "must be the id of a resource")
    request = {
        "permission": permission,
        "principalId": principal_id,
        "namespaceId": namespace_id,
        "resourceId": resource_id,
    }
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(session, actor_id, "restrictions.create", request)
        if permission == policy.PERMISSION:
            grants.lock_administrators(session)
        if principal_id is not None:
            policy.principal(session, principal_id)
        if namespace_id is not None:
            namespace_cases.live(session, namespace_id)
        restriction = state.insert(
            session,
            permission=permission,
            created_by=actor_id,
            principal_id=principal_id,
            namespace_id=namespace_id,
            resource_id=resource_id,
        )
        if permission == policy.PERMISSION:
            policy.keep_an_administrator(change, request)
        change.audit("restriction", restriction.id, namespace_id, admission.present(request))
        return restriction


def get_restriction(db: Database, actor_id: str, restriction_id: str) -> state.Restriction:
    """A restriction.

    Raises:
        NotFound: no restriction has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    return policy.administered_get(db, actor_id, "restriction", restriction_id, state.get)


def list_restrictions(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[state.Restriction]:
    """Every restriction in creation order, the page ``window`` asks for."""
    return policy.administered_page(db, actor_id, "restrictions.list", state.list_all, window)


def delete_restriction(
    db: Database, actor_id: str, command: DeleteRestriction
) -> state.Restriction:
    """Remove a restriction and return what it was.

    Raises:
        NotFound: no restriction has this id (also when it was already removed).
        Forbidden: the caller may not administer the Installation (audited).
    """
    restriction_id = command.restriction_id
    admission.require_id("restriction", restriction_id)
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(session, actor_id, "restrictions.delete")
        restriction = admission.found(state.get(session, restriction_id), "restriction")
        if not state.delete(session, restriction_id):
            raise errors.NotFound("the restriction does not exist")
        narrowed = {"principalId": restriction.principal_id, "resourceId": restriction.resource_id}
        change.audit(
            "restriction",
            restriction.id,
            restriction.namespace_id,
            {"permission": restriction.permission, **admission.present(narrowed)},
        )
        return restriction
