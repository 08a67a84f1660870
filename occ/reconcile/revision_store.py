"""The database side of a revision pass: the consistent first read (decided by
``revision_snapshot``), the reads before each effect, and every publication, each in its own
short transaction fenced by the claim.

``revision.run_pass`` sees it through the ``RevisionStore`` protocol, so the pass's logic can be
exercised with an in-memory store; this module is the PostgreSQL one. Nothing here calls a
Compute Driver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal, Protocol

from occ import iam
from occ.drivers.account import ownership
from occ.drivers.compute import base
from occ.foundation import codes, errors, fingerprints
from occ.reconcile import (
    account_credentials,
    authority,
    environment,
    outcome,
    pass_report,
    revision_snapshot,
    settle,
    startup_warnings,
)
from occ.reconcile.context import ClaimContext
from occ.reconcile.revision_snapshot import Snapshot
from occ.state import (
    agents,
    audit,
    deploys,
    iam_policy,
    namespaces,
    repairs,
    revisions,
    runtime_observations,
    secret_store,
    secrets,
    values,
    work_queue,
)
from occ.state.db import Session

Code = codes.Code
ACTIVATE_ACTION = "agents.lifecycle.activate"
RETIRE_ACTION = "agents.lifecycle.retire"


Moved = Literal["moved", "stopped"]


class RevisionStore(Protocol):
    """Reads and publications of one revision pass (each one fenced transaction)."""

    def load(self) -> Snapshot | outcome.PassResult: ...

    def refresh(self, snapshot: Snapshot) -> Snapshot: ...

    def move_pointer(self, snapshot: Snapshot) -> Moved | outcome.PassResult: ...

    def publish_activation(
        self,
        snapshot: Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revisions.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult: ...

    def degrade(
        self, snapshot: Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult: ...

    def complete(self, code: Code) -> outcome.PassResult: ...

    def publish_retirement(self, snapshot: Snapshot) -> outcome.PassResult: ...

    def supersede(self, snapshot: Snapshot) -> outcome.PassResult: ...

    def defer(self, code: Code, *, delay_ms: int | None) -> outcome.PassResult: ...

    def fail(self, code: Code) -> outcome.PassResult: ...

    def retry(self, code: Code) -> outcome.PassResult: ...


class DatabaseRevisionStore:
    """``RevisionStore`` on PostgreSQL for one claimed revision item."""

    def __init__(
        self, worker: environment.Worker, context: ClaimContext, *, maintenance: bool
    ) -> None:
        self._worker = worker
        self._context = context
        self._maintenance = maintenance

    @property
    def _claim(self) -> values.Claim:
        return self._context.claim

    def load(self) -> Snapshot | outcome.PassResult:
        with self._worker.database.transaction() as session:
            return self._load(session)

    def _load(self, session: Session) -> Snapshot | outcome.PassResult:
        owner, driver_name = self._claim.owner, self._worker.driver.name
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
                if revision is not None and self._maintenance
                else None
            ),
        )
        refusal = revision_snapshot.refusal(
            read, driver_name=driver_name, maintenance=self._maintenance
        )
        if refusal is not None:
            return settle.by_class(session, self._worker.policy, self._context, refusal)
        assert agent is not None and revision is not None  # the refusal checked them
        if revision_snapshot.retiring(read, maintenance=self._maintenance):
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
                self._context,
                action="agents.deploy",
                resource=iam.Resource("agent", agent.id, agent.namespace_id),
                decision=denial,
            )
        credential = self._unseal(session, revision)
        if isinstance(credential, outcome.PassResult):
            return credential
        return revision_snapshot.snapshot(
            agent,
            revision,
            revisions.list_revisions(session, agent.id),
            driver_name=driver_name,
            credential=credential,
            successor_id=deploys.pending_successor(session, agent.id, revision.revision_number),
            age_ms=self._age_ms(session),
            retired=revisions.retired(session, agent.id),
        )

    def _age_ms(self, session: Session) -> int:
        """How long ago the claimed item was admitted, on the database clock."""
        age = work_queue.database_now(session) - self._claim.created_at
        return max(int(age.total_seconds() * 1000), 0)

    def refresh(self, snapshot: Snapshot) -> Snapshot:
        """Under a renewed claim, the snapshot with its Agent and pending successor read again
        (what a pass checks right before an effect)."""
        agent, revision = snapshot.agent, snapshot.revision
        with self._worker.database.transaction() as session:
            self._fence(session)
            current = agents.get(session, agent.namespace_id, agent.id)
            successor = deploys.pending_successor(session, agent.id, revision.revision_number)
        return dataclasses.replace(
            snapshot, agent=current if current is not None else agent, successor_id=successor
        )

    def _unseal(
        self, session: Session, revision: revisions.Revision
    ) -> base.Credential | outcome.PassResult | None:
        """The harness credential, read only now: after the re-authorization, under the live
        claim (renewed in this transaction), and never stored anywhere but the driver's call."""
        account = ownership.pinned(revision.harness_auth)
        if account is not None:
            work_queue.renew(session, self._worker.policy, self._claim)
            return account_credentials.deliverable(
                session, self._context, self._worker, revision, account
            )
        secret_id = revision.harness_auth.get("secretId")
        if not isinstance(secret_id, str):
            return None
        work_queue.renew(session, self._worker.policy, self._claim)
        sealed = secrets.sealed_value(session, revision.namespace_id, secret_id)
        if sealed is None:
            return settle.fail(session, self._context, Code.HARNESS_CREDENTIAL_UNAVAILABLE)
        driver = self._worker.secrets or secret_store.SecretStore.from_settings(
            self._worker.settings
        )
        try:
            value = driver.unseal(revision.namespace_id, secret_id, sealed)
        except errors.SecretUnreadable:
            return settle.fail(session, self._context, Code.HARNESS_CREDENTIAL_UNAVAILABLE)
        key = fingerprints.revision_key(
            self._worker.settings.credential_fingerprint_key, revision.id
        )
        return base.Credential(value, key)

    def move_pointer(self, snapshot: Snapshot) -> Moved | outcome.PassResult:
        """The claim-fenced compare-and-set of the Agent's active revision."""
        agent, revision = snapshot.agent, snapshot.revision
        with self._worker.database.transaction() as session:
            self._fence(session)
            agents.lock_namespace(session, agent.namespace_id)
            current = agents.get(session, agent.namespace_id, agent.id, lock=True)
            if (
                current is not None
                and current.desired_runtime_state != agents.DesiredRuntimeState.RUNNING
            ):
                return "stopped"
            if current is None or not agents.activate(
                session, agent.id, expected=agent.active_revision_id, candidate=revision.id
            ):
                return self._retry_in(session, Code.ACTIVE_REVISION_CHANGED)
        return "moved"

    def publish_activation(
        self,
        snapshot: Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revisions.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult:
        """Publish the endpoint, record the revisions the pass ``retired`` (the next deploy
        leaves them alone), append the activation audit once, and complete, the result the
        runtime's startup ``warnings`` when it reported any."""
        agent, revision = snapshot.agent, snapshot.revision
        with self._worker.database.transaction() as session:
            self._fence(session)
            current = agents.get(session, agent.namespace_id, agent.id, lock=True)
            if current is None or current.active_revision_id != revision.id:
                return self._retry_in(session, Code.ACTIVE_REVISION_CHANGED)
            agents.publish_endpoint(session, agent.id, revision.id, activation.endpoint)
            revisions.record_retired(session, agent.id, (r.id for r in retired))
            runtime_observations.record(
                session, agent.id, revision.id, runtime_observations.RuntimeStatus.READY, code
            )
            if not audit.has_event(session, revision.id, ACTIVATE_ACTION):
                previous = snapshot.active.id if snapshot.active else None
                audit.work_event(
                    session,
                    self._claim,
                    action=ACTIVATE_ACTION,
                    resource_kind="agent_revision",
                    resource_id=revision.id,
                    details={
                        "computeDriverId": self._worker.driver.name,
                        "reasonCode": code,
                        "previousRevisionId": previous if previous != revision.id else None,
                        "revisionNumber": revision.revision_number,
                    },
                )
            pass_report.startup_warnings(warnings)
            return settle.complete(
                session,
                self._context,
                code,
                result_data={"warnings": list(warnings)} if warnings else None,
            )

    def degrade(
        self, snapshot: Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult:
        """A repair found the active revision unhealthy: record it ``degraded``, then look
        again after ``recheck_ms`` (the runtime is coming back) or, without it, complete
        ``REVISION_DEGRADED`` (the fleet observer looks again). Never retires or fails it."""
        agent, revision = snapshot.agent, snapshot.revision
        with self._worker.database.transaction() as session:
            self._fence(session)
            current = agents.get(session, agent.namespace_id, agent.id)
            if current is None or current.active_revision_id != revision.id:
                return settle.complete(session, self._context, Code.REVISION_MAINTENANCE_SUPERSEDED)
            runtime_observations.record(
                session,
                agent.id,
                revision.id,
                runtime_observations.RuntimeStatus.DEGRADED,
                _observation_code(reason_code),
            )
            if recheck_ms is None:
                return settle.complete(session, self._context, Code.REVISION_DEGRADED)
            return settle.defer(
                session,
                self._worker.policy,
                self._context,
                Code.REVISION_INCOMPLETE,
                delay_ms=recheck_ms,
            )

    def complete(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.complete(session, self._context, code)

    def publish_retirement(self, snapshot: Snapshot) -> outcome.PassResult:
        """The failed revision's runtime was retired: audit it, admit a repair of the Agent's
        active revision (a runtime the failed one shared, as a kubernetes Agent's embedded
        gateway, is back at once rather than at the next observation), and complete
        ``REVISION_RETIRED``."""
        revision = snapshot.revision
        with self._worker.database.transaction() as session:
            self._fence(session)
            deployment = deploys.deployment(session, revision.id)
            revisions.record_retired(session, revision.agent_id, (revision.id,))
            self._repair_active(session, revision)
            audit.work_event(
                session,
                self._claim,
                action=RETIRE_ACTION,
                resource_kind="agent_revision",
                resource_id=revision.id,
                details={
                    "computeDriverId": self._worker.driver.name,
                    "reasonCode": Code.REVISION_RETIRED,
                    "deploymentReasonCode": deployment.reason_code if deployment else None,
                    "revisionNumber": revision.revision_number,
                },
            )
            return settle.complete(session, self._context, Code.REVISION_RETIRED)

    def supersede(self, snapshot: Snapshot) -> outcome.PassResult:
        """An older revision than the active one: done, audited, no Compute call."""
        with self._worker.database.transaction() as session:
            result = settle.complete(session, self._context, Code.REVISION_SUPERSEDED)
            audit.work_event(
                session,
                self._claim,
                action="agents.lifecycle.supersede",
                resource_kind="agent_revision",
                resource_id=snapshot.revision.id,
                details={
                    "activeRevisionId": snapshot.active.id if snapshot.active else None,
                    "reasonCode": Code.REVISION_SUPERSEDED,
                },
            )
        return result

    def defer(self, code: Code, *, delay_ms: int | None) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.defer(
                session, self._worker.policy, self._context, code, delay_ms=delay_ms
            )

    def fail(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.fail(session, self._context, code)

    def retry(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return self._retry_in(session, code)

    # -- helpers ------------------------------------------------------------------------------

    def _repair_active(self, session: Session, retired: revisions.Revision) -> None:
        """Admit a repair of the Agent's active revision (unless one is live, or the Agent
        does not run one), owned like any repair by whoever deployed it."""
        agent = agents.get(session, retired.namespace_id, retired.agent_id)
        if agent is None or agent.desired_runtime_state != agents.DesiredRuntimeState.RUNNING:
            return
        active_id = agent.active_revision_id
        if active_id is None or active_id == retired.id:
            return
        active = revisions.get_revision(session, agent.id, active_id)
        if active is None or repairs.live(session, agent.id, active.id):
            return
        owner = values.WorkOwner(
            namespace_id=active.namespace_id,
            actor_id=active.actor_id,
            agent_id=active.agent_id,
            revision_id=active.id,
        )
        repairs.enqueue(session, owner)

    def _fence(self, session: Session) -> None:
        # the first statement renews the claim: a stale worker's transaction rolls back whole
        work_queue.renew(session, self._worker.policy, self._claim)

    def _retry_in(self, session: Session, code: Code) -> outcome.PassResult:
        return settle.retry(session, self._worker.policy, self._context, code)


def _observation_code(code: str) -> str:
    """A driver's code as an observation's reason (codes are data, shaped like occ's own)."""
    return code if codes.is_code_shaped(code) else Code.RUNTIME_STARTUP_FAILED
