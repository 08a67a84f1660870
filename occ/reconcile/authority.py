"""Re-authorization of a work item's original actor against current IAM, and its refusal.

Workers never trust the admission-time decision: policy may have changed since. A refusal
fails the item permanently (``ACTOR_REVOKED`` when the principal is gone or disabled, else
``AUTHORIZATION_DENIED``) and writes an ``authorization_denial`` audit, in the same fenced
transaction, before any Compute call.
"""

from __future__ import annotations

from collections.abc import Sequence

from occ import iam
from occ.foundation import codes
from occ.reconcile import outcome, settle
from occ.reconcile.context import ClaimContext
from occ.state import audit
from occ.state.db import Session


def first_denial(
    session: Session, checks: Sequence[tuple[str, str, iam.Resource]]
) -> iam.Decision | None:
    """The first refused ``(principal, permission, resource)`` decision, or ``None``."""
    for principal_id, permission, resource in checks:
        decision = iam.authorize(session, principal_id, permission, resource)
        if not decision.allowed:
            return decision
    return None


def first_restriction(
    session: Session, checks: Sequence[tuple[str, str, iam.Resource]]
) -> iam.Decision | None:
    """The first decision a Restriction refuses, or ``None``: the checks' other refusals (no
    binding on exactly that resource) do not count here, only deny rules that match it."""
    for principal_id, permission, resource in checks:
        decision = iam.authorize(session, principal_id, permission, resource)
        if decision.reason == iam.Reason.RESTRICTED:
            return decision
    return None


def refused(
    session: Session,
    context: ClaimContext,
    permission: str,
    *,
    action: str,
    resource: iam.Resource,
) -> outcome.PassResult | None:
    """Re-check the item's actor for ``permission`` on ``resource``: when refused, the item
    failed and the denial audited (``refuse``); ``None`` when it is still allowed."""
    denial = first_denial(session, [(context.claim.owner.actor_id, permission, resource)])
    if denial is None:
        return None
    return refuse(session, context, action=action, resource=resource, decision=denial)


def refuse(
    session: Session,
    context: ClaimContext,
    *,
    action: str,
    resource: iam.Resource,
    decision: iam.Decision,
) -> outcome.PassResult:
    """Fail the item for a refused authorization and audit the denial."""
    code = codes.Code.ACTOR_REVOKED if decision.actor_revoked else codes.Code.AUTHORIZATION_DENIED
    result = settle.fail(session, context, code)
    audit.work_event(
        session,
        context.claim,
        kind="authorization_denial",
        action=action,
        outcome="denied",
        resource_kind=resource.kind,
        resource_id=resource.id,
        details={
            "reasonCode": code,
            "reason": str(decision.reason),
            "principalId": decision.evidence.principal_id,
            "authorization": decision.evidence.as_details(),
        },
    )
    return result
