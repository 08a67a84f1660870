"""Retention on PostgreSQL: a prune removes expired terminal work in bounded batches and keeps
the rows something still reads; idempotency records go after their 24 hours."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from occ.state import retention, values, work_queue
from occ.state.db import Database
from tests.support import rows
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
