"""The writes of a revision pass: the active pointer's compare-and-set and every publication
that ends a pass (activation, degradation, retirement, supersession).

Each function runs inside a transaction the store opened and fenced by the claim; nothing here
calls a Compute Driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import (
    account_credentials,
    environment,
    outcome,
    pass_report,
    revision_snapshot,
    settle,
    startup_warnings,
)
from occ.reconcile.context import ClaimContext
from occ.reconcile.revision_snapshot import Snapshot
from occ.state import agents, audit, deploys, repairs, revisions, runtime_observations
from occ.state.db import Session

Code = codes.Code
ACTIVATE_ACTION = "agents.lifecycle.activate"
RETIRE_ACTION = "agents.lifecycle.retire"

Moved = Literal["moved", "stopped"]


def move_pointer(
    session: Session, worker: environment.Worker, context: ClaimContext, snapshot: Snapshot
) -> Moved | outcome.PassResult:
    """The compare-and-set of the Agent's active revision (``stopped``: the Agent is no longer
    wanted running; a changed pointer retries the pass; a pinned account whose withdrawal occ
    recorded since the pass's credential check fails it, ``account_credentials``)."""
    agent, revision = snapshot.agent, snapshot.revision
    agents.lock_namespace(session, agent.namespace_id)
    withdrawn = account_credentials.withdrawn_meanwhile(session, context, revision)
    if withdrawn is not None:
        return withdrawn
    current = agents.get(session, agent.namespace_id, agent.id, lock=True)
    if current is not None and current.desired_runtime_state != agents.DesiredRuntimeState.RUNNING:
        return "stopped"
    if current is None or not agents.activate(
        session, agent.id, expected=agent.active_revision_id, candidate=revision.id
    ):
        return settle.retry(session, worker.policy, context, Code.ACTIVE_REVISION_CHANGED)
    return "moved"


def activation(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    snapshot: Snapshot,
    published: base.Activation,
    *,
    code: Code,
    retired: Sequence[revisions.Revision],
    warnings: startup_warnings.Judged,
) -> outcome.PassResult:
    """Publish the endpoint, record the revisions the pass ``retired`` (the next deploy
    leaves them alone), append the activation audit once, and complete, the result the
    runtime's startup ``warnings`` when it reported any."""
    agent, revision = snapshot.agent, snapshot.revision
    current = agents.get(session, agent.namespace_id, agent.id, lock=True)
    if current is None or current.active_revision_id != revision.id:
        return settle.retry(session, worker.policy, context, Code.ACTIVE_REVISION_CHANGED)
    agents.publish_endpoint(session, agent.id, revision.id, published.endpoint)
    revisions.record_retired(session, agent.id, (r.id for r in retired))
    runtime_observations.record(
        session, agent.id, revision.id, runtime_observations.RuntimeStatus.READY, code
    )
    if not audit.has_event(session, revision.id, ACTIVATE_ACTION):
        previous = snapshot.active.id if snapshot.active else None
        _audit_runtime(
            session,
            worker,
            context,
            ACTIVATE_ACTION,
            revision,
            reasonCode=code,
            previousRevisionId=previous if previous != revision.id else None,
        )
    pass_report.startup_warnings(warnings)
    return settle.complete(
        session,
        context,
        code,
        result_data={"warnings": list(warnings)} if warnings else None,
    )


def degradation(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    snapshot: Snapshot,
    reason_code: str,
    *,
    recheck_ms: int | None,
) -> outcome.PassResult:
    """Record the active revision ``degraded``, then look again after ``recheck_ms`` (the
    runtime is coming back) or, without it, complete ``REVISION_DEGRADED`` (the fleet observer
    looks again). Never retires or fails it."""
    agent, revision = snapshot.agent, snapshot.revision
    current = agents.get(session, agent.namespace_id, agent.id)
    if current is None or current.active_revision_id != revision.id:
        return settle.complete(session, context, Code.REVISION_MAINTENANCE_SUPERSEDED)
    runtime_observations.record(
        session,
        agent.id,
        revision.id,
        runtime_observations.RuntimeStatus.DEGRADED,
        observation_code(reason_code),
    )
    if recheck_ms is None:
        return settle.complete(session, context, Code.REVISION_DEGRADED)
    return settle.defer(
        session, worker.policy, context, Code.REVISION_INCOMPLETE, delay_ms=recheck_ms
    )


def retirement(
    session: Session, worker: environment.Worker, context: ClaimContext, snapshot: Snapshot
) -> outcome.PassResult:
    """Audit the failed revision's retired runtime, admit a repair of the Agent's active
    revision (a runtime the failed one shared, as a kubernetes Agent's embedded gateway, is
    back at once rather than at the next observation), and complete ``REVISION_RETIRED``."""
    revision = snapshot.revision
    deployment = deploys.deployment(session, revision.id)
    revisions.record_retired(session, revision.agent_id, (revision.id,))
    _repair_active(session, revision)
    _audit_runtime(
        session,
        worker,
        context,
        RETIRE_ACTION,
        revision,
        reasonCode=Code.REVISION_RETIRED,
        deploymentReasonCode=deployment.reason_code if deployment else None,
    )
    return settle.complete(session, context, Code.REVISION_RETIRED)


def supersession(session: Session, context: ClaimContext, snapshot: Snapshot) -> outcome.PassResult:
    """Complete an older revision than the active one, audited, with no Compute call."""
    result = settle.complete(session, context, Code.REVISION_SUPERSEDED)
    audit.work_event(
        session,
        context.claim,
        action="agents.lifecycle.supersede",
        resource_kind="agent_revision",
        resource_id=snapshot.revision.id,
        details={
            "activeRevisionId": snapshot.active.id if snapshot.active else None,
            "reasonCode": Code.REVISION_SUPERSEDED,
        },
    )
    return result


def observation_code(code: str) -> str:
    """A driver's code as an observation's reason (codes are data, shaped like occ's own)."""
    return code if codes.is_code_shaped(code) else Code.RUNTIME_STARTUP_FAILED


def _audit_runtime(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    action: str,
    revision: revisions.Revision,
    **details: str | None,
) -> None:
    """The audit event of what the pass did to ``revision``'s runtime: ``details`` with the
    driver and the revision number."""
    audit.work_event(
        session,
        context.claim,
        action=action,
        resource_kind="agent_revision",
        resource_id=revision.id,
        details={
            "computeDriverId": worker.driver.name,
            **details,
            "revisionNumber": revision.revision_number,
        },
    )


def _repair_active(session: Session, retired: revisions.Revision) -> None:
    """Admit a repair of the Agent's active revision (unless one is live, or there is none to
    repair: ``revision_snapshot.repair_target``)."""
    agent = agents.get(session, retired.namespace_id, retired.agent_id)
    active_id = revision_snapshot.repair_target(agent, retired.id)
    if agent is None or active_id is None:
        return
    active = revisions.get_revision(session, agent.id, active_id)
    if active is None or repairs.live(session, agent.id, active.id):
        return
    repairs.enqueue(session, revision_snapshot.repair_owner(active))
