"""Agent stop work: stop the active revision first, then every other revision of this driver.

Re-checks ``agent:operate`` for the original actor; a later deploy (desired state back to
``running``) supersedes a pending stop, and a stop under way: before every shutdown the pass
renews its claim and reads the Agent again, in one transaction. Clears the active pointer
only if it still names the stopped revision. Revisions, snapshots and data stay.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from occ import iam
from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import authority, environment, kinds, outcome, settle, specs
from occ.reconcile.context import ClaimContext, ClaimGuard
from occ.state import agents, audit, work_queue
from occ.state import revisions as revision_rows
from occ.state.work_keys import WorkKind

Code = codes.Code


@dataclass(frozen=True)
class StopPlan:
    """What a stop stops: the active revision first, then this driver's other revisions made
    before the stop was requested."""

    active: revision_rows.Revision | None
    others: tuple[revision_rows.Revision, ...]

    def in_order(self) -> list[revision_rows.Revision]:
        """The active revision first, then the others."""
        return [*([self.active] if self.active else []), *self.others]


def plan_stop(
    agent: agents.Agent,
    revisions: Sequence[revision_rows.Revision],
    *,
    requested_at: dt.datetime,
    driver_name: str,
) -> StopPlan | Code:
    """The stop's plan, or the code that ends it first: ``STOP_SUPERSEDED`` when the Agent is
    wanted running again or its active revision came after the request,
    ``COMPUTE_DRIVER_MISMATCH`` when another driver runs it."""
    if agent.desired_runtime_state != agents.DesiredRuntimeState.STOPPED:
        return Code.STOP_SUPERSEDED
    active = next((r for r in revisions if r.id == agent.active_revision_id), None)
    if active is not None and active.created_at > requested_at:
        return Code.STOP_SUPERSEDED
    if active is not None and active.compute_driver != driver_name:
        return Code.COMPUTE_DRIVER_MISMATCH
    others = tuple(
        r
        for r in revisions
        if r is not active and r.compute_driver == driver_name and r.created_at <= requested_at
    )
    return StopPlan(active, others)


def stop_each(
    driver: base.ComputeDriver,
    guard: ClaimGuard,
    plan: StopPlan,
    superseded: Callable[[], outcome.PassResult | None],
) -> outcome.PassResult | None:
    """Stop the plan's revisions in order, each right after ``superseded`` (a read of the Agent
    under a renewed claim) said to go on and under a freshly renewed claim; the result that
    ended the stop early, else ``None``."""
    for revision in plan.in_order():
        ended = superseded()
        if ended is not None:
            return ended
        guard.renew_now()
        driver.stop_revision(guard.operation(), specs.revision(revision))
    return None


def reconcile(
    worker: environment.Worker, context: ClaimContext, loaded: None
) -> outcome.PassResult:
    """One pass over an ``AGENT_STOPPED`` item (one per stop request)."""
    claim = context.claim
    with worker.database.transaction() as session:
        agent = settle.owner_agent(session, context)
        if isinstance(agent, outcome.PassResult):
            return agent
        resource = iam.Resource("agent", agent.id, agent.namespace_id)
        refused = authority.refused(
            session, context, "agent:operate", action="agents.stop", resource=resource
        )
        if refused is not None:
            return refused
        plan = plan_stop(
            agent,
            revision_rows.list_revisions(session, agent.id),
            requested_at=claim.created_at,
            driver_name=worker.driver.name,
        )
        if isinstance(plan, Code):
            return settle.by_class(session, worker.policy, context, plan)
    active, others = plan.active, plan.others
    ended = stop_each(worker.driver, context, plan, lambda: _superseded(worker, context, agent))
    if ended is not None:
        return ended

    with worker.database.transaction() as session:
        work_queue.renew(session, worker.policy, claim)  # fences the publication
        current = agents.get(session, agent.namespace_id, agent.id, lock=True)
        if current is None or current.desired_runtime_state != agents.DesiredRuntimeState.STOPPED:
            return settle.complete(session, context, Code.STOP_SUPERSEDED)
        if active is not None:
            agents.clear_active(session, agent.id, active.id)
        code = Code.AGENT_STOPPED if active is not None else Code.AGENT_ALREADY_STOPPED
        audit.work_event(
            session,
            claim,
            action="agents.lifecycle.stop",
            resource_kind="agent",
            resource_id=agent.id,
            details={
                "computeDriverId": worker.driver.name,
                "reasonCode": code,
                "revisionId": active.id if active else None,
                "stoppedRevisionIds": [r.id for r in others],
            },
        )
        return settle.complete(session, context, code)


def _superseded(
    worker: environment.Worker, context: ClaimContext, agent: agents.Agent
) -> outcome.PassResult | None:
    """Right before one shutdown, under a renewed claim: ``STOP_SUPERSEDED`` (completed)
    when the Agent is gone or wanted running again meanwhile, else ``None`` (go on)."""
    with worker.database.transaction() as session:
        work_queue.renew(session, worker.policy, context.claim)  # ClaimLost when it is gone
        current = agents.get(session, agent.namespace_id, agent.id)
        if current is None or current.desired_runtime_state != agents.DesiredRuntimeState.STOPPED:
            return settle.complete(session, context, Code.STOP_SUPERSEDED)
    return None


HANDLER = kinds.Handler(
    kind=WorkKind.AGENT_STOPPED,
    start=kinds.start_claim,
    reconcile=reconcile,
    operation="agent.stopped",
    ends=kinds.AgentOperation("stop", frozenset({Code.AGENT_STOPPED})),
)
