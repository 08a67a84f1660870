"""The audit log's months on PostgreSQL: exported in sequence order (and resumed where an
export stopped), dropped only once exported, each drop audited, and refused while a long
reader holds the log rather than holding up its writers."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import sqlalchemy as sa

from occ.controller import audit_archive, installation
from occ.foundation import errors
from occ.state import audit, audit_partitions
from occ.state.db import Database
from tests.support import audit_log, locks, processes

_PAST = sa.text("""
    INSERT INTO occ.audit_events (id, occurred_at, kind, action, actor_id, outcome)
    SELECT 'aud_' || gen_random_uuid(), :at + n * interval '1 second', 'mutation',
           'test.event', 'prn_test', 'success'
      FROM generate_series(1, :count) n
""")


def _months_ago(owner_db: Database, months: int) -> audit_partitions.Month:
    with owner_db.transaction() as session:
        start = audit_partitions.current_month_start(session)
    for _ in range(months):
        start = (start - dt.timedelta(days=1)).replace(day=1)
    return audit_partitions.Month(
        f"audit_events_y{start.year:04d}m{start.month:02d}",
        start,
        audit_partitions.next_month(start),
    )


@pytest.fixture
def history(owner_db: Database, boot: installation.BootstrapResult) -> list[audit_partitions.Month]:
    """Three and two months ago: 30 and 20 events, in their own partitions."""
    old, older = _months_ago(owner_db, 2), _months_ago(owner_db, 3)
    with owner_db.transaction() as session:
        audit_partitions.ensure(session, since=older.start)
        session.execute(_PAST, {"at": older.start, "count": 30})
        session.execute(_PAST, {"at": old.start, "count": 20})
    return [older, old]


def _drops(db: Database) -> list[audit.AuditEvent]:
    with db.transaction() as session:
        return [
            e
            for e in audit.list_events(session, limit=100)
            if e.action == audit_archive.DROP_ACTION
        ]


def test_export_then_drop_removes_exactly_the_exported_months(
    db: Database, owner_db: Database, history: list[audit_partitions.Month]
) -> None:
    older, old = history
    lines: list[audit.AuditEvent] = []

    exported = audit_archive.export(
        owner_db, before=old.start, after_sequence=None, write=lines.append
    )

    assert exported.events == 30 and exported.months == (older.name,)
    assert [e.sequence for e in lines] == sorted(e.sequence for e in lines)
    assert all(e.occurred_at < old.start for e in lines)
    with pytest.raises(errors.Conflict, match=old.name):  # exported only up to its start
        audit_archive.drop_partitions(owner_db, before=old.end, force=False)

    dropped = audit_archive.drop_partitions(owner_db, before=old.start, force=False)

    assert dropped == audit_archive.Dropped((older.name,), 30)
    with owner_db.transaction() as session:
        names = {m.name for m in audit_partitions.months(session)}
        remaining = session.execute(
            sa.text("SELECT count(*) FROM occ.audit_events WHERE action = 'test.event'")
        ).scalar_one()
    assert older.name not in names and old.name in names and remaining == 20
    [drop] = _drops(db)
    assert drop.resource_id == older.name
    assert drop.details == {
        "rangeStart": older.start.isoformat(),
        "rangeEnd": older.end.isoformat(),
        "events": 30,
        "exported": True,
    }


def test_an_export_resumes_after_the_last_event_it_wrote(
    owner_db: Database, history: list[audit_partitions.Month]
) -> None:
    older, old = history
    first: list[audit.AuditEvent] = []

    class Stopped(Exception):
        pass

    def write_ten(event: audit.AuditEvent) -> None:
        if len(first) == 10:
            raise Stopped
        first.append(event)

    with pytest.raises(Stopped):
        audit_archive.export(owner_db, before=old.end, after_sequence=None, write=write_ten)
    with owner_db.transaction() as session:  # an export that stopped records nothing
        assert audit_partitions.exports(session) == {}
    rest: list[audit.AuditEvent] = []
    done = audit_archive.export(
        owner_db, before=old.end, after_sequence=first[-1].sequence, write=rest.append
    )

    ids = [e.id for e in first + rest]
    assert len(ids) == len(set(ids)) == 50
    assert done.months == (older.name, old.name)


def test_a_forced_drop_removes_an_unexported_month_and_says_so(
    db: Database, owner_db: Database, history: list[audit_partitions.Month]
) -> None:
    older, old = history

    dropped = audit_archive.drop_partitions(owner_db, before=old.end, force=True)

    assert dropped.months == (older.name, old.name) and dropped.events == 50
    assert {d.resource_id: d.details["exported"] for d in _drops(db)} == {
        older.name: False,
        old.name: False,
    }


def test_the_current_month_and_later_ones_are_never_dropped(
    owner_db: Database, boot: installation.BootstrapResult
) -> None:
    current = _months_ago(owner_db, 0)
    with owner_db.transaction() as session:
        audit_partitions.ensure(session)

    dropped = audit_archive.drop_partitions(
        owner_db, before=dt.datetime(2999, 1, 1, tzinfo=dt.UTC), force=True
    )

    with owner_db.transaction() as session:
        left = audit_partitions.months(session)
    assert all(
        m.end <= current.start
        for m in (audit_partitions.Month.named(n) for n in dropped.months)
        if m
    )
    assert left[0].start == current.start
    assert len(left) == 1 + audit_partitions.MONTHS_AHEAD


def test_a_drop_beside_a_long_reader_answers_busy_and_holds_no_writer_up(
    db: Database, owner_db: Database, history: list[audit_partitions.Month]
) -> None:
    older, _ = history
    audit_archive.export(owner_db, before=older.end, after_sequence=None, write=lambda _: None)

    def drop() -> audit_archive.Dropped:
        return audit_archive.drop_partitions(owner_db, before=older.end, force=False)

    with audit_log.read_elsewhere(owner_db):  # a later export streaming
        beside = audit_log.ddl_beside_a_write(drop, db, owner_db)

    assert beside.written, "an audit write waited behind the drop's DETACH PARTITION"
    assert isinstance(beside.outcome, errors.AuditLogBusy)
    assert beside.outcome.code == "AUDIT_LOG_BUSY"
    assert audit_partitions.LOCK_WAIT_MS / 1000 <= beside.elapsed_s < audit_log.DEADLINE_S / 2
    with owner_db.transaction() as session:
        assert older.name in {m.name for m in audit_partitions.months(session)}
    assert _drops(db) == []

    assert drop() == audit_archive.Dropped((older.name,), 30)  # the reader is done: retried


def test_an_event_written_into_an_exported_month_meanwhile_is_never_dropped_unseen(
    db: Database,
    owner_db: Database,
    history: list[audit_partitions.Month],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    older, _ = history
    audit_archive.export(owner_db, before=older.end, after_sequence=None, write=lambda _: None)
    monkeypatch.setattr(audit_partitions, "LOCK_WAIT_MS", 10_000)  # the drop waits this out
    outcome: list[object] = []
    with owner_db.transaction() as writing:
        # a writer whose event falls into the exported month has not committed yet
        writing.execute(_PAST, {"at": older.start, "count": 1})

        def drop() -> None:
            try:
                outcome.append(
                    audit_archive.drop_partitions(owner_db, before=older.end, force=False)
                )
            except errors.Conflict as refused:
                outcome.append(refused)

        dropping = threading.Thread(target=drop)
        dropping.start()
        processes.wait_for(
            lambda: locks.waiters(owner_db) >= 1, timeout=10, message="the drop to wait"
        )
    dropping.join(timeout=15)
    [refused] = outcome
    assert isinstance(refused, errors.Conflict) and older.name in str(refused)
    with owner_db.transaction() as session:
        assert older.name in {m.name for m in audit_partitions.months(session)}


def test_the_audit_log_stays_append_only(
    db: Database, owner_db: Database, history: list[audit_partitions.Month]
) -> None:
    for statement in (
        "UPDATE occ.audit_events SET action = 'changed'",
        "DELETE FROM occ.audit_events",
    ):
        with (
            pytest.raises(sa.exc.DBAPIError, match="immutable"),
            owner_db.transaction() as session,
        ):
            session.execute(sa.text(statement))
