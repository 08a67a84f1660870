"""The reads of a revision pass: the consistent first read (decided by ``revision_snapshot``),
the harness credential unsealed under the live claim, and the re-read before each effect.

Each function runs inside a transaction the store opened; nothing here writes a row but a
claim renewal or the settlement of a refused pass, and nothing calls a Compute Driver.
"""

from __future__ import annotations

import dataclasses

from occ import iam
from occ.drivers.account import ownership
from occ.drivers.compute import base
from occ.foundation import codes, errors, fingerprints
from occ.reconcile import (
    account_credentials,
    authority,
    environment,
    outcome,
    revision_snapshot,
    settle,
)
from occ.reconcile.context import ClaimContext
from occ.reconcile.revision_snapshot import Snapshot
from occ.state import (
    agents,
    deploys,
    iam_policy,
    namespaces,
    revisions,
    secret_store,
    secrets,
    work_queue,
)
from occ.state.db import Session

Code = codes.Code


def load(
    session: Session, worker: environment.Worker, context: ClaimContext, *, maintenance: bool
) -> Snapshot | outcome.PassResult:
    """The pass's first read: its snapshot, or the settled result of a refusal or denial."""
    owner, driver_name = context.claim.owner, worker.driver.name
    agent = agents.get(session, owner.namespace_id, owner.agent_id) if owner.agent_id else None
    revision = (
        revisions.get_revision(session, owner.agent_id, owner.revision_id)
        if owner.agent_id and owner.revision_id
        else None
    )
    read = revision_snapshot.RevisionRead(
        namespace=namespaces.get(session, owner.namespace_id),
        agent=agent,
        revision=revision,
        principal=(
            iam_policy.get_principal(session, agent.service_principal_id) if agent else None
        ),
        deployment=(
            deploys.deployment(session, revision.id)
            if revision is not None and maintenance
            else None
        ),
    )
    refusal = revision_snapshot.refusal(read, driver_name=driver_name, maintenance=maintenance)
    if refusal is not None:
        return settle.by_class(session, worker.policy, context, refusal)
    assert agent is not None and revision is not None  # the refusal checked them
    if revision_snapshot.retiring(read, maintenance=maintenance):
        return revision_snapshot.snapshot(
            agent,
            revision,
            revisions.list_revisions(session, agent.id),
            driver_name=driver_name,
            credential=None,
            successor_id=None,
            retire=True,
        )
    checks = revision_snapshot.deploy_checks(owner.actor_id, agent, revision)
    denial = authority.first_denial(session, checks)
    if denial is not None:
        return authority.refuse(
            session,
            context,
            action="agents.deploy",
            resource=iam.Resource("agent", agent.id, agent.namespace_id),
            decision=denial,
        )
    credential = _unseal(session, worker, context, revision)
    if isinstance(credential, outcome.PassResult):
        return credential
    return revision_snapshot.snapshot(
        agent,
        revision,
        revisions.list_revisions(session, agent.id),
        driver_name=driver_name,
        credential=credential,
        successor_id=deploys.pending_successor(session, agent.id, revision.revision_number),
        age_ms=_age_ms(session, context),
        retired=revisions.retired(session, agent.id),
    )


def refresh(session: Session, snapshot: Snapshot) -> Snapshot:
    """The snapshot with its Agent and pending successor read again (what a pass checks right
    before an effect)."""
    agent, revision = snapshot.agent, snapshot.revision
    current = agents.get(session, agent.namespace_id, agent.id)
    successor = deploys.pending_successor(session, agent.id, revision.revision_number)
    return dataclasses.replace(
        snapshot, agent=current if current is not None else agent, successor_id=successor
    )


def _age_ms(session: Session, context: ClaimContext) -> int:
    """How long ago the claimed item was admitted, on the database clock."""
    age = work_queue.database_now(session) - context.claim.created_at
    return max(int(age.total_seconds() * 1000), 0)


def _unseal(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    revision: revisions.Revision,
) -> base.Credential | outcome.PassResult | None:
    """The harness credential, read only now: after the re-authorization, under the live
    claim (renewed in this transaction), and never stored anywhere but the driver's call."""
    account = ownership.pinned(revision.harness_auth)
    if account is not None:
        work_queue.renew(session, worker.policy, context.claim)
        return account_credentials.deliverable(session, context, worker, revision, account)
    secret_id = revision.harness_auth.get("secretId")
    if not isinstance(secret_id, str):
        return None
    work_queue.renew(session, worker.policy, context.claim)
    sealed = secrets.sealed_value(session, revision.namespace_id, secret_id)
    if sealed is None:
        return settle.fail(session, context, Code.HARNESS_CREDENTIAL_UNAVAILABLE)
    driver = worker.secrets or secret_store.SecretStore.from_settings(worker.settings)
    try:
        value = driver.unseal(revision.namespace_id, secret_id, sealed)
    except errors.SecretUnreadable:
        return settle.fail(session, context, Code.HARNESS_CREDENTIAL_UNAVAILABLE)
    key = fingerprints.revision_key(worker.settings.credential_fingerprint_key, revision.id)
    return base.Credential(value, key)
