"""AgentRevision work: deploy (prepare, activate, retire predecessors) and maintenance.

One pass: a consistent read and the pre-checks (owners, Namespace ready, service principal,
pinned harness and driver); re-authorization of the original actor and the Agent's service
principal; supersession and stop checks without Compute; preparation; activation in the
driver's ``activation_order`` around a claim-fenced compare-and-set of the active pointer;
retirement of earlier revisions; then a second transaction that appends the activation audit
and completes the item. A pass that loses its claim anywhere publishes nothing; a pass that
finds its revision already active (a recovered or maintenance pass) resumes at activation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Final, TypeVar

from sqlalchemy import orm

from occ import codes, iam
from occ.drivers.compute import base
from occ.reconcile import authority, environment, outcome
from occ.reconcile.context import ClaimContext
from occ.state import agents, audit, iam_policy, namespaces, values, work_queue

T = TypeVar("T")

SUPPORTED_HARNESSES: Final = {"openclaw": "embedded", "codex": "dedicated"}
ACTIVATE_ACTION: Final = "agents.lifecycle.activate"


@dataclasses.dataclass(frozen=True)
class _Snapshot:
    agent: agents.Agent
    revision: agents.Revision
    active: agents.Revision | None
    earlier: tuple[agents.Revision, ...]


def reconcile(worker: environment.Worker, context: ClaimContext) -> outcome.PassResult:
    """One pass over an ``agent_revision:<rev>:reconcile`` or ``...:maintenance:<n>`` item."""
    maintenance = ":maintenance:" in context.claim.work_id
    snapshot = _read_and_check(worker, context, maintenance=maintenance)
    if isinstance(snapshot, outcome.PassResult):
        return snapshot
    spec = spec_of(snapshot.revision)
    driver, agent, revision = worker.driver, snapshot.agent, snapshot.revision

    if agent.desired_runtime_state != "running":
        return _stopped_agent(worker, context, snapshot, spec, maintenance=maintenance)
    if (
        snapshot.active is not None
        and snapshot.active.id != revision.id
        and snapshot.active.revision_number >= revision.revision_number
    ):
        return _superseded(worker, context, snapshot)
    if driver.capabilities.requires_stopped_predecessors:
        _each(context, driver.stop_revision, snapshot.earlier)

    try:
        observation = _effect(context, lambda: driver.prepare_revision(context.operation(), spec))
    except base.TransientDriverError as exc:
        observation = base.Pending(exc.code)
    except base.PermanentDriverError as exc:
        observation = base.Failed(exc.code, permanent=True, reason=exc.reason)
    if isinstance(observation, base.Pending):
        return _pending(
            worker, context, "REVISION_INCOMPLETE", delay_ms=worker.settings.unready_recheck_ms
        )
    if isinstance(observation, base.Failed):
        return _failed(worker, context, observation)
    if not isinstance(observation, base.Ready):
        return _fail(worker, context, "INVALID_DRIVER_OBSERVATION")

    already_active = agent.active_revision_id == revision.id
    if not already_active:
        if driver.capabilities.activation_order == base.ActivationOrder.BEFORE_COMMIT:
            _activate(worker, context, spec)
        moved = _move_pointer(worker, context, snapshot)
        if moved == "stopped":
            return _stopped_agent(worker, context, snapshot, spec, maintenance=False)
        if isinstance(moved, outcome.PassResult):
            return moved
    try:
        activation = _activate(worker, context, spec)
        _each(context, driver.retire_revision, snapshot.earlier)
    except (base.TransientDriverError, base.PermanentDriverError):
        # the pointer already moved: the next pass finds the revision active and resumes
        return _pending(worker, context, "REVISION_FINALIZATION_INCOMPLETE", delay_ms=None)
    return _complete_activation(
        worker,
        context,
        snapshot,
        activation,
        code="REVISION_ALREADY_ACTIVE" if already_active else "REVISION_ACTIVATED",
        maintenance=maintenance,
    )


# -- reading and checking -----------------------------------------------------------------------


def _read_and_check(
    worker: environment.Worker, context: ClaimContext, *, maintenance: bool
) -> _Snapshot | outcome.PassResult:
    """The consistent read and every check before Compute; a result when the pass ends here."""
    with worker.database.transaction() as session:
        return _check(session, worker, context, maintenance=maintenance)


def _check(
    session: orm.Session, worker: environment.Worker, context: ClaimContext, *, maintenance: bool
) -> _Snapshot | outcome.PassResult:
    owner = context.claim.owner
    namespace = namespaces.get(session, owner.namespace_id)
    agent = agents.get(session, owner.namespace_id, owner.agent_id) if owner.agent_id else None
    revision = (
        agents.get_revision(session, owner.agent_id, owner.revision_id)
        if owner.agent_id and owner.revision_id
        else None
    )
    if namespace is None or agent is None or revision is None:
        return _fail_in(session, context, "INVALID_REVISION_OWNER")
    if not namespace.live or namespace.status != "ready":
        return _fail_in(session, context, "NAMESPACE_NOT_READY")
    if (
        revision.namespace_id != agent.namespace_id
        or revision.service_principal_id != agent.service_principal_id
    ):
        return _fail_in(session, context, "INVALID_REVISION_OWNER")
    if agent.status != "active":
        return _fail_in(session, context, "INVALID_AGENT_STATE")
    principal = iam_policy.get_principal(session, agent.service_principal_id)
    if principal is None or principal.disabled:
        return _fail_in(session, context, "INVALID_AGENT_PRINCIPAL")
    if SUPPORTED_HARNESSES.get(revision.harness_id) != revision.harness_mode:
        return _fail_in(session, context, "HARNESS_MISMATCH")
    if revision.compute_driver != worker.driver.name:
        return _fail_in(session, context, "COMPUTE_DRIVER_MISMATCH")
    if maintenance:
        deployment = work_queue.get(session, f"agent_revision:{revision.id}:reconcile")
        if (
            deployment is None
            or deployment.state == values.WorkState.FAILED_PERMANENT
            or (deployment.reason_code == "REVISION_SUPERSEDED")
        ):
            work_queue.complete(session, context.claim, code="REVISION_SUPERSEDED")
            return outcome.success("REVISION_SUPERSEDED")
    denial = authority.first_denial(session, _deploy_checks(owner.actor_id, agent, revision))
    if denial is not None:
        return authority.refuse(
            session,
            context,
            action="agents.deploy",
            resource=iam.Resource("agent", agent.id, agent.namespace_id),
            decision=denial,
        )
    all_revisions = agents.list_revisions(session, agent.id)
    active = next((r for r in all_revisions if r.id == agent.active_revision_id), None)
    earlier = tuple(
        sorted(
            (
                r
                for r in all_revisions
                if r.revision_number < revision.revision_number
                and r.compute_driver == worker.driver.name
            ),
            key=lambda r: r.revision_number,
        )
    )
    return _Snapshot(agent=agent, revision=revision, active=active, earlier=earlier)


def _deploy_checks(
    actor_id: str, agent: agents.Agent, revision: agents.Revision
) -> list[tuple[str, str, iam.Resource]]:
    namespace_id = agent.namespace_id
    checks = [(actor_id, "agent:deploy", iam.Resource("agent", agent.id, namespace_id))]
    configuration = iam.Resource("configuration", revision.configuration_id, namespace_id)
    secret_id = revision.harness_auth.get("secretId")
    for principal in (actor_id, agent.service_principal_id):
        checks.append((principal, "configuration:read", configuration))
        if isinstance(secret_id, str):
            checks.append(
                (principal, "secret:operate", iam.Resource("secret", secret_id, namespace_id))
            )
    return checks


def spec_of(revision: agents.Revision) -> base.RevisionSpec:
    return base.RevisionSpec(
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        revision_id=revision.id,
        revision_number=revision.revision_number,
        configuration_generation=revision.configuration_generation,
        configuration_document=revision.configuration_document,
        harness_id=revision.harness_id,
        harness_version=revision.harness_version,
        harness_mode=revision.harness_mode,
        service_principal_id=revision.service_principal_id,
    )


# -- effects and publication --------------------------------------------------------------------


def _effect(context: ClaimContext, call: Callable[[], T]) -> T:
    """A Compute call under a freshly renewed claim."""
    context.renew_now()
    return call()


def _each(
    context: ClaimContext,
    operation: Callable[[base.Operation, base.RevisionSpec], None],
    revisions: tuple[agents.Revision, ...],
) -> None:
    """One Compute call per revision, each under a freshly renewed claim."""
    for revision in revisions:
        context.renew_now()
        operation(context.operation(), spec_of(revision))


def _activate(
    worker: environment.Worker, context: ClaimContext, spec: base.RevisionSpec
) -> base.Activation:
    return _effect(context, lambda: worker.driver.activate_revision(context.operation(), spec))


def _move_pointer(
    worker: environment.Worker, context: ClaimContext, snapshot: _Snapshot
) -> str | outcome.PassResult:
    """Transaction 1: the claim-fenced compare-and-set of the Agent's active revision.

    ``"moved"``, ``"stopped"`` (the Agent no longer desires running) or the requeue result
    when another revision moved the pointer first.
    """
    agent, revision = snapshot.agent, snapshot.revision
    with worker.database.transaction() as session:
        work_queue.renew(session, worker.policy, context.claim)  # fences the whole transaction
        agents.lock_namespace(session, agent.namespace_id)
        current = agents.get(session, agent.namespace_id, agent.id, lock=True)
        if current is not None and current.desired_runtime_state != "running":
            return "stopped"
        if current is None or not agents.activate(
            session, agent.id, expected=agent.active_revision_id, candidate=revision.id
        ):
            item = work_queue.retry(
                session, worker.policy, context.claim, code="ACTIVE_REVISION_CHANGED"
            )
            return _requeued(item, "ACTIVE_REVISION_CHANGED")
    return "moved"


def _complete_activation(
    worker: environment.Worker,
    context: ClaimContext,
    snapshot: _Snapshot,
    activation: base.Activation,
    *,
    code: str,
    maintenance: bool,
) -> outcome.PassResult:
    """Transaction 2: publish the endpoint, append the activation audit, complete."""
    agent, revision = snapshot.agent, snapshot.revision
    with worker.database.transaction() as session:
        work_queue.renew(session, worker.policy, context.claim)
        current = agents.get(session, agent.namespace_id, agent.id, lock=True)
        if current is None or current.active_revision_id != revision.id:
            item = work_queue.retry(
                session, worker.policy, context.claim, code="ACTIVE_REVISION_CHANGED"
            )
            return _requeued(item, "ACTIVE_REVISION_CHANGED")
        agents.publish_endpoint(session, agent.id, revision.id, activation.endpoint)
        if not _activation_audited(session, revision.id):
            previous = snapshot.active.id if snapshot.active else None
            audit.append(
                session,
                kind="mutation",
                action=ACTIVATE_ACTION,
                actor_id=context.claim.owner.actor_id,
                outcome="success",
                namespace_id=agent.namespace_id,
                resource_kind="agent_revision",
                resource_id=revision.id,
                work_id=context.claim.work_id,
                details={
                    "computeDriverId": worker.driver.name,
                    "reasonCode": code,
                    "previousRevisionId": previous if previous != revision.id else None,
                    "revisionNumber": revision.revision_number,
                },
            )
        work_queue.complete(session, context.claim, code=code)
        _schedule_maintenance(session, worker, context, maintenance=maintenance)
    return outcome.success(code)


def _activation_audited(session: orm.Session, revision_id: str) -> bool:
    return any(
        event.action == ACTIVATE_ACTION
        for event in audit.list_events(session, resource_id=revision_id, limit=50)
    )


def _schedule_maintenance(
    session: orm.Session, worker: environment.Worker, context: ClaimContext, *, maintenance: bool
) -> None:
    interval_s = worker.driver.capabilities.maintenance_interval_s
    if not interval_s:
        return
    interval_ms = max(int(interval_s * 1000), 1)
    now_ms = work_queue.database_now(session).timestamp() * 1000
    bucket = math.floor((now_ms + interval_ms) / interval_ms)
    if maintenance:
        current = int(context.claim.work_id.rsplit(":", 1)[1])
        bucket = max(bucket, current + 1)
    owner = context.claim.owner
    revision_id = owner.revision_id
    work_queue.enqueue(
        session,
        f"agent_revision:{revision_id}:maintenance:{bucket}",
        owner,
        delay_ms=max(int(bucket * interval_ms - now_ms), 0),
    )


def _stopped_agent(
    worker: environment.Worker,
    context: ClaimContext,
    snapshot: _Snapshot,
    spec: base.RevisionSpec,
    *,
    maintenance: bool,
) -> outcome.PassResult:
    """The Agent was stopped meanwhile: stop this revision (and leftovers) and say so."""
    driver = worker.driver
    _effect(context, lambda: driver.stop_revision(context.operation(), spec))
    agent = snapshot.agent
    if agent.active_revision_id in (None, snapshot.revision.id):
        _each(context, driver.retire_revision, snapshot.earlier)
    code = "REVISION_MAINTENANCE_SUPERSEDED" if maintenance else "REVISION_STOPPED"
    with worker.database.transaction() as session:
        work_queue.complete(session, context.claim, code=code)
    return outcome.success(code)


def _superseded(
    worker: environment.Worker, context: ClaimContext, snapshot: _Snapshot
) -> outcome.PassResult:
    """An older revision than the active one: nothing to do, no Compute call."""
    active_id = snapshot.active.id if snapshot.active else None
    with worker.database.transaction() as session:
        work_queue.complete(session, context.claim, code="REVISION_SUPERSEDED")
        audit.append(
            session,
            kind="mutation",
            action="agents.lifecycle.supersede",
            actor_id=context.claim.owner.actor_id,
            outcome="success",
            namespace_id=snapshot.agent.namespace_id,
            resource_kind="agent_revision",
            resource_id=snapshot.revision.id,
            work_id=context.claim.work_id,
            details={"activeRevisionId": active_id, "reasonCode": "REVISION_SUPERSEDED"},
        )
    return outcome.success("REVISION_SUPERSEDED")


def _pending(
    worker: environment.Worker, context: ClaimContext, code: str, *, delay_ms: int | None
) -> outcome.PassResult:
    with worker.database.transaction() as session:
        deferred = work_queue.defer(
            session, worker.policy, context.claim, code=code, delay_ms=delay_ms
        )
        if deferred.deadline_exceeded:
            return outcome.permanent("CONVERGENCE_DEADLINE_EXCEEDED")
        return outcome.requeued(session, codes.Outcome.PENDING, code, deferred.available_at)


def _failed(
    worker: environment.Worker, context: ClaimContext, observation: base.Failed
) -> outcome.PassResult:
    if observation.permanent:
        return _fail(
            worker,
            context,
            observation.code if observation.code in codes.REGISTRY else "RUNTIME_STARTUP_FAILED",
        )
    with worker.database.transaction() as session:
        item = work_queue.retry(
            session, worker.policy, context.claim, code="DEPENDENCY_UNAVAILABLE"
        )
    return _requeued(item, "DEPENDENCY_UNAVAILABLE")


def _fail(worker: environment.Worker, context: ClaimContext, code: str) -> outcome.PassResult:
    with worker.database.transaction() as session:
        return _fail_in(session, context, code)


def _fail_in(session: orm.Session, context: ClaimContext, code: str) -> outcome.PassResult:
    work_queue.fail(session, context.claim, code=code)
    return outcome.permanent(code)


def _requeued(item: values.WorkItem, code: str) -> outcome.PassResult:
    if item.state == values.WorkState.FAILED_PERMANENT:
        return outcome.permanent(code)
    return outcome.PassResult(codes.Outcome.RETRY, code)
