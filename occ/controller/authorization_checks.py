"""Authorization checks: would this principal be allowed this permission on this resource?

Read-only: answers the decision ``occ.iam`` would take now, for the caller or (with
``installation:administer``) for another principal, and changes nothing but the audit of a
refused check. The resource must exist; to a caller checking for itself, a resource it may
not read is answered as missing (404), as every route does.
"""

from __future__ import annotations

from dataclasses import dataclass

from occ import iam
from occ.controller import admission, installation, policy
from occ.controller import namespaces as namespace_cases
from occ.foundation import errors, ids
from occ.state import iam_policy
from occ.state.db import Database, Session

ACTION = "authorization_checks.create"


@dataclass(frozen=True, kw_only=True)
class Check:
    """The question: may ``principal_id`` (the caller when ``None``) use ``permission`` on
    ``resource``, which lives in ``namespace_id`` (for every kind but ``installation`` and
    ``namespace``)?"""

    permission: str
    resource: iam_policy.ResourceRef
    namespace_id: str | None = None
    principal_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The decision for one (principal, permission, resource)."""

    principal_id: str
    permission: str
    resource: iam.Resource
    allowed: bool
    reason: iam.Reason


def check(db: Database, actor_id: str, question: Check) -> CheckResult:
    """Decide the question's permission on its resource for the caller or its principal.

    Raises:
        InvalidInput: an unknown ``permission``, a bad ``resource``, ``namespace_id`` or
            ``principal_id``.
        Forbidden: ``principal_id`` names another principal and the caller may not
            administer the Installation (audited).
        NotFound: the resource or the principal does not exist (or the caller may not read the
            resource it checks for itself).
    """
    permission, principal_id = question.permission, question.principal_id
    if not iam.is_permission(permission):
        raise errors.InvalidInput.at(("permission",), "is not a known permission")
    if principal_id is not None:
        ids.require("principal", principal_id, ("principal_id",))
    target = _target(question.resource, question.namespace_id)
    subject = actor_id if principal_id is None else principal_id
    request = {
        "permission": permission,
        "resource": {"kind": target.kind, "id": target.id},
        "principalId": subject,
    }
    with admission.guarded(db, actor_id, read_only=True) as session:
        if subject != actor_id:
            policy.administer(session, actor_id, ACTION, request)
            policy.principal(session, subject)
        _require_exists(session, target)
        if subject == actor_id and target.kind != "installation":
            admission.require(
                session,
                actor_id,
                ACTION,
                f"{target.kind}:read",
                target,
                hide_unless_readable=True,
                request=request,
            )
        decision = iam.authorize(session, subject, permission, target)
        return CheckResult(
            principal_id=subject,
            permission=permission,
            resource=target,
            allowed=decision.allowed,
            reason=decision.reason,
        )


def _target(resource: iam_policy.ResourceRef, namespace_id: str | None) -> iam.Resource:
    kind, resource_id = policy.resource_input(resource).kind, resource.id
    if kind == "installation":
        if namespace_id is not None:
            raise errors.InvalidInput.at(("namespace_id",), "the Installation is in no Namespace")
        return iam.Resource.installation(resource_id)
    if kind == "namespace":
        if namespace_id not in (None, resource_id):
            raise errors.InvalidInput.at(("namespace_id",), "a Namespace is its own Namespace")
        return iam.Resource.namespace(resource_id)
    if namespace_id is None:
        raise errors.InvalidInput.at(("namespace_id",), f"a {kind} needs its Namespace")
    return iam.Resource(
        kind, resource_id, ids.require("namespace", namespace_id, ("namespace_id",))
    )


def _require_exists(session: Session, target: iam.Resource) -> None:
    missing = errors.NotFound(f"the {target.kind.replace('_', ' ')} does not exist")
    if target.kind == "installation":
        if installation.current(session).id != target.id:
            raise missing
        return
    assert target.namespace_id is not None  # every other kind lives in a Namespace
    namespace_cases.live(session, target.namespace_id)
    if target.kind != "namespace" and not iam_policy.resource_exists(
        session, target.kind, target.id, target.namespace_id
    ):
        raise missing
