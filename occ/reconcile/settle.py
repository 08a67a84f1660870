"""How a pass ends its claim: complete, fail, retry or defer, as one fenced queue transition
plus the kind's terminal-failure effect, in the caller's transaction, returning the result;
and the Agent an Agent item is for, or its failure when that Agent is gone.

Every reconciler ends through these, so "what a failure of this kind also changes" (the
context's ``on_failed``) is applied on every path, and every pass reports the same
``PassResult`` shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.foundation import codes
from occ.reconcile import outcome, pass_report
from occ.reconcile.context import ClaimContext
from occ.state import agents, values, work_queue
from occ.state.db import Session


def complete(
    session: Session,
    context: ClaimContext,
    code: str,
    *,
    result_data: Mapping[str, Any] | None = None,
) -> outcome.PassResult:
    """The item succeeded with ``code``."""
    work_queue.complete(session, context.claim, code=code, result_data=result_data)
    return outcome.success(code)


def fail(
    session: Session,
    context: ClaimContext,
    code: str,
    *,
    result_data: Mapping[str, Any] | None = None,
    details: Mapping[str, Any] | None = None,
) -> outcome.PassResult:
    """The item failed for good with ``code``; ``details`` go to the kind's failure audit."""
    item = work_queue.fail(session, context.claim, code=code, result_data=result_data)
    _settled(session, context, item, details)
    return outcome.permanent(code)


def retry(
    session: Session,
    policy: values.QueuePolicy,
    context: ClaimContext,
    code: str,
    *,
    details: Mapping[str, Any] | None = None,
) -> outcome.PassResult:
    """Requeue after backoff keeping the attempt; at the attempt limit the item fails."""
    item = work_queue.retry(session, policy, context.claim, code=code)
    _settled(session, context, item, details)
    if item.state == values.WorkState.FAILED_PERMANENT:
        return outcome.permanent(code)
    return outcome.requeued(codes.Outcome.RETRY, code, item)


def defer(
    session: Session,
    policy: values.QueuePolicy,
    context: ClaimContext,
    code: str,
    *,
    delay_ms: int | None = None,
    details: Mapping[str, Any] | None = None,
) -> outcome.PassResult:
    """Not done yet: requeue with the attempt refunded; past the convergence deadline the item
    fails with ``CONVERGENCE_DEADLINE_EXCEEDED``, its result the timeout and the runtime failure
    this pass observed (``pass_report.runtime_failure``), if any."""
    item = work_queue.defer(
        session,
        policy,
        context.claim,
        code=code,
        delay_ms=delay_ms,
        runtime_failure=pass_report.runtime_failure(),
    )
    _settled(session, context, item, details)
    if item.state == values.WorkState.FAILED_PERMANENT:
        return outcome.permanent(codes.Code.CONVERGENCE_DEADLINE_EXCEEDED)
    return outcome.requeued(codes.Outcome.PENDING, code, item)


def by_class(
    session: Session, policy: values.QueuePolicy, context: ClaimContext, code: codes.Code
) -> outcome.PassResult:
    """End the item as ``code``'s outcome class says (a decision that ends a pass early)."""
    match code.outcome:
        case codes.Outcome.SUCCESS:
            return complete(session, context, code)
        case codes.Outcome.RETRY:
            return retry(session, policy, context, code)
        case codes.Outcome.PENDING:
            return defer(session, policy, context, code)
        case codes.Outcome.PERMANENT:
            return fail(session, context, code)


def owner_agent(session: Session, context: ClaimContext) -> agents.Agent | outcome.PassResult:
    """The Agent the item is for; when it is gone, the item failed with
    ``INVALID_AGENT_OWNER``."""
    owner = context.claim.owner
    agent = agents.get(session, owner.namespace_id, owner.agent_id or "")
    if agent is None:
        return fail(session, context, codes.Code.INVALID_AGENT_OWNER)
    return agent


def _settled(
    session: Session,
    context: ClaimContext,
    item: values.WorkItem,
    details: Mapping[str, Any] | None,
) -> None:
    """Apply the kind's terminal-failure effect when ``item`` ended failed; else nothing."""
    if item.state == values.WorkState.FAILED_PERMANENT:
        context.on_failed(session, item, details or {})
