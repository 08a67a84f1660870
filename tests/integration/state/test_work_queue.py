"""The work queue against a real PostgreSQL, connected as occ_app: fencing, attempts, recovery."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import errors
from occ.state import finalizers, models, values, work_claims, work_queue
from occ.state.db import Database
from tests.support import rows
from tests.support.queue_steps import Queue, enqueue_revision


@pytest.fixture
def work_id(queue: Queue, namespace_id: str, actor: str) -> str:
    """The provisioning Namespace's work towards ready, enqueued."""
    return queue.enqueue_namespace(namespace_id, actor)


# -- enqueue ------------------------------------------------------------------------------------


def test_enqueue_is_idempotent_and_conflicts_on_another_actor(
    db: Database, queue: Queue, work_id: str, namespace_id: str, actor: str
) -> None:
    again = queue.enqueue_namespace(namespace_id, actor)
    assert again == work_id
    with db.transaction() as session:
        other = rows.principal(session, name="other")
    key, owner = rows.namespace_work(namespace_id, actor)
    with pytest.raises(errors.IdempotencyConflict), db.transaction() as session:
        work_queue.enqueue(session, key, dataclasses.replace(owner, actor_id=other))
    with db.transaction() as session:
        count = session.execute(sa.select(sa.func.count()).select_from(models.ControllerWork))
        assert count.scalar_one() == 1


def test_enqueue_joins_the_callers_transaction(db: Database, namespace_id: str, actor: str) -> None:
    key, owner = rows.namespace_work(namespace_id, actor)
    work_id = str(key)
    with pytest.raises(RuntimeError), db.transaction() as session:
        work_queue.enqueue(session, key, owner)
        raise RuntimeError("the caller's transaction fails")
    with db.transaction() as session:
        assert work_queue.get(session, work_id) is None


def test_enqueue_of_a_terminal_key_returns_the_old_outcome(
    db: Database, queue: Queue, work_id: str, namespace_id: str, actor: str
) -> None:
    run = queue.run_one()
    with db.transaction() as session:
        work_queue.complete(session, run, code="NAMESPACE_READY")
    queue.enqueue_namespace(namespace_id, actor)
    item = queue.item(work_id)
    assert item.state == values.WorkState.SUCCEEDED
    assert item.reason_code == "NAMESPACE_READY"


# -- fencing ------------------------------------------------------------------------------------


def test_a_stale_claim_changes_nothing_after_recovery_and_takeover(
    db: Database, queue: Queue, policy: values.QueuePolicy, actor: str
) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=actor, status="ready")
        agent_id = rows.agent(session, namespace_id=namespace_id)
        session.execute(
            sa.update(models.Agent).where(models.Agent.id == agent_id).values(status="deleting")
        )
        key, owner = rows.agent_delete_work(namespace_id, agent_id, actor)
        work_id = str(key)
        work_queue.enqueue(session, key, owner)
    first = queue.run_one()
    queue.expire(work_id)
    assert queue.recover().requeued == (work_id,)
    queue.make_available(work_id)
    second = queue.run_one()
    assert second.token != first.token
    assert second.attempt_count == 2
    before = queue.item(work_id)
    evidence_before = queue.evidence_codes(work_id)

    stale_writes: dict[str, Callable[[orm.Session], object]] = {
        "renew": lambda s: work_queue.renew(s, policy, first),
        "complete": lambda s: work_queue.complete(s, first, code="AGENT_DELETED"),
        "defer": lambda s: work_queue.defer(s, policy, first, code="REVISION_INCOMPLETE"),
        "retry": lambda s: work_queue.retry(s, policy, first, code="DEPENDENCY_UNAVAILABLE"),
        "fail": lambda s: work_queue.fail(s, first, code="INVALID_TARGET"),
        "release": lambda s: work_queue.release(s, first),
        "finalizer": lambda s: finalizers.finalize_agent_deletion(s, first),
    }
    for name, write in stale_writes.items():
        with pytest.raises(errors.ClaimLost), db.transaction() as session:
            write(session)
        assert queue.item(work_id) == before, name
    assert queue.evidence_codes(work_id) == evidence_before
    with db.transaction() as session:
        assert session.get(models.Agent, agent_id) is not None

    with db.transaction() as session:
        work_queue.renew(session, policy, second)
        finalizers.finalize_agent_deletion(session, second)
    with db.transaction() as session:
        assert session.get(models.Agent, agent_id) is None
        assert work_queue.get(session, work_id) is None


def test_an_expired_lease_cannot_be_renewed_even_before_recovery(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    run = queue.run_one()
    queue.expire(work_id)
    with pytest.raises(errors.ClaimLost), db.transaction() as session:
        work_queue.renew(session, policy, run)
    with pytest.raises(errors.ClaimLost), db.transaction() as session:
        work_queue.complete(session, run, code="NAMESPACE_READY")
    assert queue.item(work_id).state == values.WorkState.CLAIMED


def test_a_dispatch_token_starts_one_run_only(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    dispatch = queue.claim_one()
    with db.transaction() as session:
        run = work_queue.start(session, policy, dispatch)
    with db.transaction() as session:
        redelivered = work_queue.start(session, policy, dispatch)
    assert run is not None
    assert redelivered is None
    assert run.token != dispatch.token
    assert run.running and not dispatch.running
    # the dispatch token was never a run token: it cannot write
    with pytest.raises(errors.ClaimLost), db.transaction() as session:
        work_queue.complete(session, dispatch, code="NAMESPACE_READY")
    with db.transaction() as session:
        work_queue.complete(session, run, code="NAMESPACE_READY")
    assert queue.item(work_id).state == values.WorkState.SUCCEEDED
    assert queue.evidence_codes(work_id) == ["NAMESPACE_READY"]


@pytest.mark.usefixtures("work_id")
def test_a_forged_token_is_refused(db: Database, queue: Queue) -> None:
    forged = dataclasses.replace(queue.run_one(), token=uuid.uuid4())
    with pytest.raises(errors.ClaimLost), db.transaction() as session:
        work_queue.complete(session, forged, code="NAMESPACE_READY")


# -- attempts -----------------------------------------------------------------------------------


def test_claim_counts_an_attempt_and_defer_refunds_it(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    for _ in range(policy.max_attempts + 3):
        run = queue.run_one()
        assert run.attempt_count == 1
        with db.transaction() as session:
            result = work_queue.defer(session, policy, run, code="NAMESPACE_INCOMPLETE", delay_ms=0)
        assert result.state == values.WorkState.QUEUED
        assert queue.progress(work_id) == (values.WorkState.QUEUED, 0, "NAMESPACE_INCOMPLETE")


def test_defer_without_delay_waits_the_backoff(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    run = queue.run_one()
    with db.transaction() as session:
        result = work_queue.defer(session, policy, run, code="NAMESPACE_INCOMPLETE")
        now = session.execute(sa.text("SELECT clock_timestamp()")).scalar_one()
    assert result.available_at is not None
    waited = (result.available_at - now).total_seconds()
    assert 0.4 < waited <= 1.0  # 1 s cap for one attempt, equal jitter: never below half
    with db.transaction() as session:
        assert work_claims.claim(session, policy, limit=1) == []
    assert queue.item(work_id).attempt_count == 0


def test_retry_keeps_the_attempt_and_fails_at_the_limit(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    for attempt in range(1, policy.max_attempts + 1):
        run = queue.run_one()
        assert run.attempt_count == attempt
        with db.transaction() as session:
            item = work_queue.retry(session, policy, run, code="DEPENDENCY_UNAVAILABLE")
        if attempt < policy.max_attempts:
            assert item.state == values.WorkState.QUEUED
            assert item.attempt_count == attempt
            assert item.reason_code is None
            queue.make_available(work_id)
    final = queue.item(work_id)
    assert final.state == values.WorkState.FAILED_PERMANENT
    assert final.reason_code == "DEPENDENCY_UNAVAILABLE"
    assert final.attempt_count == policy.max_attempts
    codes = queue.evidence_codes(work_id)
    assert codes == ["DEPENDENCY_UNAVAILABLE"] * policy.max_attempts


def test_retry_backoff_grows_with_equal_jitter(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    for attempt in range(1, 4):
        run = queue.run_one()
        with db.transaction() as session:
            item = work_queue.retry(session, policy, run, code="DEPENDENCY_UNAVAILABLE")
            now = session.execute(sa.text("SELECT clock_timestamp()")).scalar_one()
        cap = min(300.0, 2 ** (attempt - 1))
        waited = (item.available_at - now).total_seconds()
        assert cap / 2 - 0.05 <= waited <= cap + 0.05, (attempt, waited)
        queue.make_available(work_id)


def test_release_requeues_at_once_with_the_attempt_refunded(
    db: Database, queue: Queue, work_id: str
) -> None:
    run = queue.run_one()
    with db.transaction() as session:
        work_queue.release(session, run)
    assert queue.progress(work_id) == (values.WorkState.QUEUED, 0, "CLAIM_RELEASED")
    again = queue.run_one()
    assert again.work_id == work_id and again.attempt_count == 1


def test_recovery_requeues_below_the_limit_and_fails_at_it(
    queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    for attempt in range(1, policy.max_attempts + 1):
        queue.run_one()
        queue.expire(work_id)
        report = queue.recover()
        if attempt < policy.max_attempts:
            assert report.requeued == (work_id,)
            assert queue.progress(work_id) == (values.WorkState.QUEUED, attempt, "LEASE_EXPIRED")
            queue.make_available(work_id)
        else:
            assert report.failed == (work_id,)
            item = queue.item(work_id)
            assert (item.state, item.attempt_count, item.reason_code) == (
                values.WorkState.FAILED_PERMANENT,
                attempt,
                "LEASE_EXPIRED",
            )


def test_an_expired_dispatch_is_requeued_with_the_attempt_refunded(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    dispatch = queue.claim_one()
    queue.expire(work_id)
    assert queue.recover().requeued == (work_id,)
    assert queue.progress(work_id) == (values.WorkState.QUEUED, 0, "DISPATCH_EXPIRED")
    with db.transaction() as session:
        assert work_queue.start(session, policy, dispatch) is None
    assert queue.claim_one().work_id == work_id


def test_recovery_reports_what_it_failed_and_knows_nothing_of_namespaces(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str, namespace_id: str
) -> None:
    one_attempt = dataclasses.replace(policy, max_attempts=1)
    queue.run_one(one_attempt)
    queue.expire(work_id)
    with db.transaction() as session:
        report = work_queue.recover_stale(session, one_attempt)
        namespace = session.get(models.Namespace, namespace_id)
        assert namespace is not None
        assert namespace.status == "provisioning"  # the kind's effect is the caller's
        audits = session.execute(
            sa.select(models.AuditEvent.action, models.AuditEvent.outcome).where(
                models.AuditEvent.namespace_id == namespace_id
            )
        ).all()
    assert report.failed == (work_id,)
    assert [(item.id, item.state, item.reason_code) for item in report.failed_items] == [
        (work_id, values.WorkState.FAILED_PERMANENT, "LEASE_EXPIRED")
    ]
    assert ("reconcile", "failure") in audits


def test_recovery_fails_exhausted_queued_items(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    run = queue.run_one()
    with db.transaction() as session:
        work_queue.retry(session, policy, run, code="DEPENDENCY_UNAVAILABLE")
    lowered = dataclasses.replace(policy, max_attempts=1)  # an operator lowered the limit
    report = queue.recover(lowered)
    assert report.exhausted == (work_id,)
    assert [item.id for item in report.failed_items] == [work_id]
    item = queue.item(work_id)
    assert (item.state, item.reason_code) == (
        values.WorkState.FAILED_PERMANENT,
        "MAX_ATTEMPTS_EXHAUSTED",
    )


def test_defer_past_the_deadline_fails_with_timeout_ms(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    run = queue.run_one()
    with db.transaction() as session:
        deferred = work_queue.defer(session, policy, run, code="NAMESPACE_INCOMPLETE", delay_ms=0)
        assert deferred.state == values.WorkState.QUEUED
    run = queue.run_one()
    queue.age(work_id, "16 min")  # the deadline is measured from created_at on the database clock
    with db.transaction() as session:
        result = work_queue.defer(session, policy, run, code="NAMESPACE_INCOMPLETE")
    assert result.state == values.WorkState.FAILED_PERMANENT
    item = queue.item(work_id)
    assert item.state == values.WorkState.FAILED_PERMANENT
    assert item.reason_code == "CONVERGENCE_DEADLINE_EXCEEDED"
    assert item.result_data == {"timeoutMs": policy.convergence_timeout_ms}
    assert queue.evidence_codes(work_id)[-1] == "CONVERGENCE_DEADLINE_EXCEEDED"


def test_complete_keeps_the_specific_code_and_warnings(
    db: Database, queue: Queue, actor: str
) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=actor, status="ready")
        agent_id = rows.agent(session, namespace_id=namespace_id)
        work_id = enqueue_revision(session, namespace_id, agent_id, actor, 1)
    run = queue.run_one()
    warnings = {"warnings": [{"code": "PLUGIN_INSTALL_FAILED", "detail": "plugin-a"}]}
    with db.transaction() as session:
        work_queue.complete(session, run, code="REVISION_ACTIVATED", result_data=warnings)
    item = queue.item(work_id)
    assert (item.reason_code, item.result_data) == ("REVISION_ACTIVATED", warnings)


@pytest.mark.usefixtures("work_id")
def test_codes_are_checked_against_the_registry(db: Database, queue: Queue) -> None:
    run = queue.run_one()
    with pytest.raises(ValueError, match="unregistered"), db.transaction() as session:
        work_queue.fail(session, run, code="SOMETHING_MADE_UP")
    with pytest.raises(ValueError, match="expected"), db.transaction() as session:
        work_queue.complete(session, run, code="DEPENDENCY_UNAVAILABLE")


# -- lanes --------------------------------------------------------------------------------------


def test_one_live_claim_per_lane_and_lanes_are_independent(
    db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=actor, status="ready")
        agent_a = rows.agent(session, namespace_id=namespace_id, name="a")
        agent_b = rows.agent(session, namespace_id=namespace_id, name="b")
        for agent_id in (agent_a, agent_b):
            for number in (1, 2, 3):
                enqueue_revision(session, namespace_id, agent_id, actor, number)
        work_queue.enqueue(session, *rows.namespace_work(namespace_id, actor))
    with db.transaction() as session:
        first = work_claims.claim(session, policy, limit=10)
    # one head per Agent lane, and Namespace work is its own lane
    assert sorted(c.owner.agent_id or c.owner.namespace_id for c in first) == sorted(
        [agent_a, agent_b, namespace_id]
    )
    with db.transaction() as session:
        assert work_claims.claim(session, policy, limit=10) == []
        assert work_claims.live_claims(session) == 3
    # heads are taken in admission order within a lane
    with db.transaction() as session:
        numbers = {
            c.owner.agent_id: session.get_one(
                models.AgentRevision, c.owner.revision_id
            ).revision_number
            for c in first
            if c.owner.revision_id
        }
    assert set(numbers.values()) == {1}


def test_a_dispatch_a_worker_cannot_read_waits_with_its_attempt_refunded(
    db: Database, queue: Queue, policy: values.QueuePolicy, work_id: str
) -> None:
    dispatch = queue.claim_one()
    with db.transaction() as session:
        deferred = work_queue.defer_dispatch(
            session, work_id, dispatch.token, code="WORK_VERSION_UNSUPPORTED", delay_ms=60_000
        )
    assert deferred
    item = queue.item(work_id)
    assert (item.state, item.attempt_count, item.claimed) == (values.WorkState.QUEUED, 0, False)
    assert item.last_progress_code == "WORK_VERSION_UNSUPPORTED"
    assert queue.evidence_codes(work_id)[-1] == "WORK_VERSION_UNSUPPORTED"
    with db.transaction() as session:
        assert work_claims.claim(session, policy, limit=1) == []  # not before the delay
        # the spent token changes nothing; a run token cannot defer a dispatch
        assert not work_queue.defer_dispatch(
            session, work_id, dispatch.token, code="WORK_VERSION_UNSUPPORTED", delay_ms=0
        )
    queue.make_available(work_id)
    run = queue.run_one()
    with db.transaction() as session:
        assert not work_queue.defer_dispatch(
            session, work_id, run.token, code="WORK_VERSION_UNSUPPORTED", delay_ms=0
        )
