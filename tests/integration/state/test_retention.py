"""Retention on PostgreSQL: a prune removes expired terminal work in bounded batches and keeps
the rows something still reads; idempotency records go after their 24 hours."""

from __future__ import annotations

import datetime as dt
import threading

import sqlalchemy as sa

from occ.state import deploys, idempotency, retention, values, work_queue
from occ.state.db import Database
from tests.support import locks, rows
from tests.support.processes import wait_for
from tests.support.work_history import Agent

DAY_MS = 86_400_000
SUCCEEDED = values.WorkState.SUCCEEDED
FAILED = values.WorkState.FAILED_PERMANENT


def _ids(db: Database) -> set[str]:
    with db.transaction() as session:
        return set(session.execute(sa.text("SELECT id FROM occ.controller_work")).scalars())


def _walk(
    db: Database, state: values.WorkState, older_than_ms: int, limit: int
) -> list[retention.WorkBatch]:
    """Every batch of one walk, each in its own transaction, as occ's app role."""
    batches: list[retention.WorkBatch] = []
    after = None
    while True:
        with db.transaction() as session:
            batch = retention.prune_work(
                session, state, older_than_ms=older_than_ms, after=after, limit=limit
            )
        batches.append(batch)
        assert batch.pruned <= limit
        if batch.scanned < limit:
            return batches
        after = batch.position


def test_a_prune_keeps_what_is_still_read_and_removes_the_rest(
    db: Database, owner_db: Database, actor: str, namespace_id: str
) -> None:
    agent = Agent(owner_db, namespace_id, actor, "kept")
    old_success = agent.deployed(SUCCEEDED, days_ago=20)
    active = agent.deployed(SUCCEEDED, days_ago=19)
    old_failure = agent.deployed(FAILED, days_ago=18)
    last_failure = agent.deployed(FAILED, days_ago=17)
    latest = agent.deployed(SUCCEEDED, days_ago=16)  # a deploy that failed to stay active
    agent.activate(agent.revisions[1])
    active_revision = agent.revisions[1]
    repairs = [
        agent.repaired(active_revision, second, days_ago=15 - second) for second in (1, 2, 3)
    ]
    young = agent.deployed(SUCCEEDED, days_ago=1)
    other = Agent(owner_db, namespace_id, actor, "other")
    others_only = other.deployed(SUCCEEDED, days_ago=30)

    for state in (SUCCEEDED, FAILED):
        _walk(db, state, older_than_ms=7 * DAY_MS, limit=2)

    kept = _ids(db)
    assert old_success not in kept and old_failure not in kept
    assert repairs[0] not in kept and repairs[1] not in kept
    assert {active, last_failure, repairs[2], young, others_only} <= kept
    # the newest succeeded deployment is ``young``: the older ``latest`` is neither newest nor
    # active, so it went
    assert latest not in kept


def test_a_prune_keeps_the_activation_a_failing_deploy_rolls_back_to(
    db: Database, owner_db: Database, actor: str, namespace_id: str
) -> None:
    agent = Agent(owner_db, namespace_id, actor, "rollback")
    older = agent.deployed(SUCCEEDED, days_ago=21)
    target = agent.deployed(SUCCEEDED, days_ago=20)
    superseded = agent.deployed(SUCCEEDED, days_ago=10, code="REVISION_SUPERSEDED")
    failing = agent.revision()  # its deployment moved the pointer and has not ended yet
    agent.activate(failing)

    for state in (SUCCEEDED, FAILED):
        _walk(db, state, older_than_ms=7 * DAY_MS, limit=2)

    kept = _ids(db)
    assert {target, superseded} <= kept  # the newest activation, and the lane's newest result
    assert older not in kept  # an older activation is nobody's rollback target
    with db.transaction() as session:
        assert deploys.last_succeeded(session, agent.id, 4) == agent.revisions[1]


def test_a_walk_goes_in_bounded_batches_and_reads_a_kept_row_once(
    db: Database, owner_db: Database, actor: str, namespace_id: str
) -> None:
    agent = Agent(owner_db, namespace_id, actor, "many")
    revision = agent.revision()
    agent.activate(revision)
    made = [agent.repaired(revision, second, days_ago=10 + second / 100) for second in range(23)]

    batches = _walk(db, SUCCEEDED, older_than_ms=7 * DAY_MS, limit=5)

    assert [batch.scanned for batch in batches] == [5, 5, 5, 5, 3]
    assert sum(batch.pruned for batch in batches) == 22
    assert _ids(db) == {made[0]}  # the newest repair (the smallest age) stays


def test_young_and_unfinished_work_is_never_pruned(
    db: Database, owner_db: Database, actor: str, namespace_id: str
) -> None:
    agent = Agent(owner_db, namespace_id, actor, "young")
    first = agent.deployed(SUCCEEDED, days_ago=3)
    second = agent.deployed(SUCCEEDED, days_ago=2)
    queued = rows.namespace_work(namespace_id, actor, "ready")
    with db.transaction() as session:
        work_queue.enqueue(session, *queued)

    _walk(db, SUCCEEDED, older_than_ms=7 * DAY_MS, limit=10)

    assert _ids(db) == {first, second, str(queued[0])}


def test_idempotency_records_go_after_their_retention(db: Database, owner_db: Database) -> None:
    with owner_db.transaction() as session:
        principal = rows.principal(session)
        for n, hours_ago in enumerate((30, 26, 25, 2)):
            session.execute(
                sa.text(
                    "INSERT INTO occ.idempotency_keys (principal_id, route, key, fingerprint, "
                    "created_at) VALUES (:p, 'route', :key, :fp, "
                    "clock_timestamp() - :hours * interval '1 hour')"
                ),
                {"p": principal, "key": f"key-{n}", "fp": "0" * 64, "hours": hours_ago},
            )
    retention_ms = int(dt.timedelta(hours=24).total_seconds() * 1000)

    with db.transaction() as session:
        first = retention.prune_idempotency(session, older_than_ms=retention_ms, limit=2)
    with db.transaction() as session:
        second = retention.prune_idempotency(session, older_than_ms=retention_ms, limit=2)

    assert (first, second) == (2, 1)
    with db.transaction() as session:
        left = session.execute(sa.text("SELECT key FROM occ.idempotency_keys")).scalars().all()
    assert left == ["key-3"]


def test_an_expired_key_is_taken_when_the_prune_deletes_it_meanwhile(
    db: Database, owner_db: Database
) -> None:
    with owner_db.transaction() as session:
        principal = rows.principal(session)
        session.execute(
            sa.text(
                "INSERT INTO occ.idempotency_keys (principal_id, route, key, fingerprint, "
                "created_at) VALUES (:p, 'route', 'key', :fp, now() - interval '2 days')"
            ),
            {"p": principal, "fp": "0" * 64},
        )
    scope = idempotency.Scope(principal_id=principal, route="route", key="key")
    retention_ms = int(dt.timedelta(hours=24).total_seconds() * 1000)
    reserved: list[bool] = []

    def reserve() -> None:
        with db.transaction() as session:
            reserved.append(idempotency.reserve(session, scope, "1" * 64))

    racing = threading.Thread(target=reserve)
    with db.transaction() as pruning:
        # the prune has locked the expired record (its CTE) and not deleted it yet: the
        # request's insert meets the record, its take-over waits for the lock
        pruning.execute(sa.text("SELECT 1 FROM occ.idempotency_keys FOR UPDATE"))
        racing.start()
        wait_for(lambda: locks.waiters(owner_db) >= 1, timeout=10, message="the take-over to wait")
        assert retention.prune_idempotency(pruning, older_than_ms=retention_ms, limit=10) == 1
    racing.join(timeout=10)
    assert reserved == [True]  # the key is free once the prune committed: a request takes it
    with db.transaction() as session:
        assert idempotency.find(session, scope) is not None
