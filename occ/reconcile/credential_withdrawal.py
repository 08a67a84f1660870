"""Credential-source withdrawal work: stop an Agent's revisions that pin a withdrawn account.

Admitted when occ learns that an account Backend withdrew a managed account
(``occ.controller.account_withdrawals``), one item per Agent and account. The pass stops this
driver's revisions of the Agent whose ``harnessAuth`` pins that account, the active one first,
clears the active pointer if it still names the stopped one, and records its own audit event
(``agents.credential_source_withdrawal``). The withdrawal is the Backend's, not an actor's
request: no permission is re-checked. Revisions pinning another source are left alone, so a
later deploy with another source is never stopped by it. A Compute failure retries; once the
attempts are exhausted the item fails with outcome permanent.
"""

from __future__ import annotations

from occ.drivers.account import ownership
from occ.foundation import codes
from occ.reconcile import environment, kinds, outcome, settle, specs
from occ.reconcile.context import ClaimContext
from occ.state import agents, audit, work_queue
from occ.state import revisions as revision_rows
from occ.state.work_keys import WorkKind

Code = codes.Code
ACTION = "agents.credential_source_withdrawal"


def pinning(
    revisions: list[revision_rows.Revision], account_id: str, driver_name: str
) -> list[revision_rows.Revision]:
    """This driver's revisions whose harness source is the account, newest first."""
    found = [
        revision
        for revision in revisions
        if revision.compute_driver == driver_name
        and (pinned := ownership.pinned(revision.harness_auth)) is not None
        and pinned.account_id == account_id
    ]
    return sorted(found, key=lambda revision: -revision.revision_number)


def reconcile(
    worker: environment.Worker, context: ClaimContext, loaded: None
) -> outcome.PassResult:
    """One pass over a ``CREDENTIAL_SOURCE_WITHDRAWAL`` item."""
    claim = context.claim
    account_id = str(claim.key.discriminator)
    with worker.database.transaction() as session:
        agent = settle.owner_agent(session, context)
        if isinstance(agent, outcome.PassResult):
            return agent
        stopping = pinning(
            revision_rows.list_revisions(session, agent.id), account_id, worker.driver.name
        )
    active = next((r for r in stopping if r.id == agent.active_revision_id), None)
    ordered = [*([active] if active else []), *(r for r in stopping if r is not active)]
    for revision in ordered:
        context.renew_now()
        worker.driver.stop_revision(context.operation(), specs.revision(revision))

    with worker.database.transaction() as session:
        work_queue.renew(session, worker.policy, claim)  # fences the publication
        current = agents.get(session, agent.namespace_id, agent.id, lock=True)
        stopped = (
            active is not None and current is not None and current.active_revision_id == active.id
        )
        if stopped:
            assert active is not None
            agents.clear_active(session, agent.id, active.id)
        code = Code.AGENT_STOPPED if stopped else Code.AGENT_ALREADY_STOPPED
        audit.work_event(
            session,
            claim,
            action=ACTION,
            resource_kind="agent",
            resource_id=agent.id,
            details={
                "accountId": account_id,
                "computeDriverId": worker.driver.name,
                "reasonCode": code,
                "revisionId": active.id if stopped and active else None,
                "stoppedRevisionIds": [r.id for r in ordered],
            },
        )
        return settle.complete(session, context, code)


HANDLER = kinds.Handler(
    kind=WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL,
    start=kinds.start_claim,
    reconcile=reconcile,
    operation="agent.credential_source_withdrawal",
)
