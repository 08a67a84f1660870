"""A prune run on PostgreSQL: every expired outcome and the idempotency records, a batch per
transaction, within its time budget; the audit months ahead, unless the audit log is busy."""

from __future__ import annotations

import itertools
import logging

import pytest
import sqlalchemy as sa

from occ.reconcile import upkeep
from occ.settings.config import Settings
from occ.state import audit_partitions, values
from occ.state.db import Database
from occ.telemetry import observability
from tests.support import audit_log, rows
from tests.support.work_history import Agent

SUCCEEDED = values.WorkState.SUCCEEDED
FAILED = values.WorkState.FAILED_PERMANENT


def _history(owner_db: Database, namespace_id: str, actor: str) -> Agent:
    """Ten repairs finished 10 days ago and two failed deployments 10 and 40 days ago."""
    agent = Agent(owner_db, namespace_id, actor, "history")
    revision = agent.revision()
    agent.activate(revision)
    for second in range(10):
        agent.repaired(revision, second, days_ago=10 + second / 100)
    agent.deployed(FAILED, days_ago=40)
    agent.deployed(FAILED, days_ago=10)
    return agent


def _count(db: Database) -> int:
    with db.transaction() as session:
        return int(
            session.execute(sa.text("SELECT count(*) FROM occ.controller_work")).scalar_one()
        )


def _world(db: Database) -> tuple[str, str]:
    """An actor and a Namespace of theirs."""
    with db.transaction() as session:
        actor = rows.principal(session)
        return actor, rows.namespace(session, created_by=actor)


def test_a_run_prunes_each_outcome_by_its_own_age(db: Database, owner_db: Database) -> None:
    actor, namespace_id = _world(db)
    _history(owner_db, namespace_id, actor)
    keep = upkeep.Retention.of(Settings())  # 7 and 30 days

    report = upkeep.prune(db, keep, batch=4)

    # nine of ten repairs (the newest stays), the failure of 40 days (the newer one stays)
    assert (report.work, report.finished) == (10, True)
    assert _count(db) == 2


def test_a_run_stops_at_its_budget_and_the_next_goes_on(db: Database, owner_db: Database) -> None:
    actor, namespace_id = _world(db)
    _history(owner_db, namespace_id, actor)
    keep = upkeep.Retention(succeeded_ms=7 * upkeep.DAY_MS, failed_ms=30 * upkeep.DAY_MS)
    ticks = itertools.count()  # a second each time the run reads the clock: three a batch

    first = upkeep.prune(
        db, keep, batch=2, budget_s=6, clock=lambda: float(next(ticks)), sleep=lambda _: None
    )
    second = upkeep.prune(db, keep, batch=2, pause=0)

    assert (first.batches, first.finished) == (2, False)
    assert first.work == 4
    assert second.finished and first.work + second.work == 10


def test_a_run_rests_after_each_batch_as_long_as_the_batch_took(
    db: Database, owner_db: Database
) -> None:
    actor, namespace_id = _world(db)
    _history(owner_db, namespace_id, actor)
    keep = upkeep.Retention(succeeded_ms=7 * upkeep.DAY_MS, failed_ms=30 * upkeep.DAY_MS)
    ticks = itertools.count(step=0.5)  # a batch takes half a second
    rests: list[float] = []

    report = upkeep.prune(
        db, keep, batch=4, budget_s=1_000, clock=lambda: next(ticks), sleep=rests.append
    )

    assert report.finished
    assert rests == [0.5 * upkeep.PAUSE] * report.batches


def _months(db: Database) -> list[str]:
    with db.transaction() as session:
        return [month.name for month in audit_partitions.months(session)]


def test_a_run_beside_a_long_reader_of_the_audit_log_leaves_its_months_to_the_next(
    db: Database, owner_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    with owner_db.transaction() as session:  # the last month ahead is still to be made
        last = audit_partitions.months(session)[-1].name
        session.execute(sa.text(f'DROP TABLE occ."{last}"'))
    keep = upkeep.Retention.of(Settings())

    with (
        caplog.at_level(logging.INFO, logger="occ"),
        audit_log.read_elsewhere(owner_db),  # an export streaming
    ):
        beside = audit_log.ddl_beside_a_write(lambda: upkeep.prune(db, keep, pause=0), db, owner_db)
        during = _months(db)

    assert beside.written, "an audit write waited behind the prune's partition DDL"
    assert isinstance(beside.outcome, upkeep.PruneReport) and beside.outcome.finished
    assert audit_partitions.LOCK_WAIT_MS / 1000 <= beside.elapsed_s < audit_log.DEADLINE_S / 2
    assert last not in during
    deferred = [
        event
        for record in caplog.records
        if (event := getattr(record, observability.EVENT_ATTRIBUTE, None))
        and event["event"] == "worker.audit-partitions-deferred"
    ]
    assert len(deferred) == 1

    upkeep.prune(db, keep, pause=0)

    assert last in _months(db)


def test_a_month_blocked_by_the_default_partition_is_reported_and_history_still_pruned(
    db: Database, owner_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    actor, namespace_id = _world(db)
    _history(owner_db, namespace_id, actor)
    with owner_db.transaction() as session:  # the last month ahead went missing, and an event
        last = audit_partitions.months(session)[-1]  # of it landed in the default partition
        session.execute(sa.text(f'DROP TABLE occ."{last.name}"'))
        session.execute(
            sa.text(
                "INSERT INTO occ.audit_events (id, occurred_at, kind, action, actor_id, outcome)"
                " VALUES ('aud_' || gen_random_uuid(), :at, 'mutation', 'test.event',"
                " 'prn_test', 'success')"
            ),
            {"at": last.start},
        )
    keep = upkeep.Retention.of(Settings())

    with caplog.at_level(logging.INFO, logger="occ"):
        report = upkeep.prune(db, keep, batch=4, pause=0)

    assert (report.work, report.finished) == (10, True)  # the work history went all the same
    failed = [
        event
        for record in caplog.records
        if (event := getattr(record, observability.EVENT_ATTRIBUTE, None))
        and event["event"] == "worker.audit-partitions-failed"
    ]
    assert len(failed) == 1 and "audit_events_default" in failed[0]["reason"]
    assert last.name not in _months(db)
