"""Agent delete work: retire every revision, delete runtime credentials, then finalize.

Re-checks ``agent:delete`` for the original actor. The rows go through the ``SECURITY
DEFINER`` finalizer, which removes the Agent, its revisions, service principal, keys, exact
IAM references and work rows only under this live claim (and writes the success audit).
"""

from __future__ import annotations

from collections.abc import Sequence

from occ import iam
from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import authority, environment, kinds, outcome, settle, specs
from occ.reconcile.context import ClaimContext, ClaimGuard
from occ.state import agents, audit, finalizers
from occ.state import revisions as revision_rows
from occ.state.db import Session
from occ.state.work_keys import WorkKind

Code = codes.Code


def reconcile(
    worker: environment.Worker, context: ClaimContext, loaded: None
) -> outcome.PassResult:
    """One pass over an ``AGENT_DELETED`` item."""
    claim = context.claim
    with worker.database.transaction() as session:
        agent = settle.owner_agent(session, context)
        if isinstance(agent, outcome.PassResult):
            return agent
        if (
            agent.status != agents.AgentStatus.DELETING
            or agent.desired_runtime_state != agents.DesiredRuntimeState.STOPPED
        ):
            return _fail(session, context, agent, Code.INVALID_AGENT_STATE)
        resource = iam.Resource("agent", agent.id, agent.namespace_id)
        refused = authority.refused(
            session, context, "agent:delete", action="agents.delete", resource=resource
        )
        if refused is not None:
            return refused
        revisions = revision_rows.list_revisions(session, agent.id)
        if any(r.compute_driver != worker.driver.name for r in revisions):
            return _fail(session, context, agent, Code.COMPUTE_DRIVER_MISMATCH)
    retire_all(worker.driver, context, revisions)
    context.renew_now()
    worker.driver.delete_agent_credentials(context.operation(), agent.namespace_id, agent.id)
    with worker.database.transaction() as session:
        finalizers.finalize_agent_deletion(session, claim)
    return outcome.success(Code.AGENT_DELETED)


def retire_all(
    driver: base.ComputeDriver, guard: ClaimGuard, revisions: Sequence[revision_rows.Revision]
) -> None:
    """Retire every revision, newest first, each under a freshly renewed claim."""
    for revision in sorted(revisions, key=lambda r: r.revision_number, reverse=True):
        guard.renew_now()
        driver.retire_revision(guard.operation(), specs.revision(revision))


def _fail(
    session: Session, context: ClaimContext, agent: agents.Agent, code: str
) -> outcome.PassResult:
    result = settle.fail(session, context, code)
    audit.work_event(
        session,
        context.claim,
        action="agents.lifecycle.delete",
        outcome="failure",
        resource_kind="agent",
        resource_id=agent.id,
        details={"reasonCode": code},
    )
    return result


HANDLER = kinds.Handler(
    kind=WorkKind.AGENT_DELETED,
    start=kinds.start_claim,
    reconcile=reconcile,
    operation="agent.deleted",
    ends=kinds.AgentOperation("delete", frozenset({Code.AGENT_DELETED})),
)
