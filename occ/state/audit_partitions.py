"""The month partitions of the audit log: which exist, their events in order, which were
exported, and dropping one.

``audit_events`` is partitioned by month of ``occurred_at`` (migration 0018), UTC, one table
``audit_events_yYYYYmMM`` per month. A month leaves as a whole: exported (each event a JSON
object, in sequence order), recorded in ``audit_exports``, then detached and dropped by the
owner. Takes the caller's session and never commits; the owner's session for ``drop`` (the
application role may create partitions ahead, through ``occ.ensure_audit_partitions``, but
never remove one). Creating or detaching a month needs the whole log to itself, so its
transaction waits for that briefly (``lock_wait_bounded``) and never behind a long reader.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.foundation import errors
from occ.state import audit, db, models

_EVENTS: Final = cast(sa.Table, models.AuditEvent.__table__)
_EXPORTS: Final = cast(sa.Table, models.AuditExport.__table__)
_NAME: Final = re.compile(r"audit_events_y([0-9]{4})m([0-9]{2})")
MONTHS_AHEAD: Final = 2
"""Months past the current one whose partitions exist ahead of their first event."""
LOCK_WAIT_MS: Final = 250
"""How long a transaction that creates or detaches a month waits for a lock. The DDL takes
ACCESS EXCLUSIVE on ``audit_events``, and every audit write queues behind it while it waits:
behind a long reader (``occ audit export`` streams from one snapshot) they would all wait for
as long as it reads. Past this the DDL gives up (``AuditLogBusy``), so a write waits this long
at most; an ordinary write's transaction ends well within it."""

_PARTITIONS: Final = sa.text("""
    SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'occ.audit_events'::regclass
""")
_ENSURE: Final = sa.text("SELECT occ.ensure_audit_partitions(:from_, :months_ahead)")
_CHECK_VIOLATION: Final = "23514"
_MONTH_START: Final = sa.text(
    "SELECT date_trunc('month', clock_timestamp() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
)


@dataclass(frozen=True)
class Month:
    """One month partition: its table and the range of ``occurred_at`` it holds (UTC)."""

    name: str
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def named(cls, name: str) -> Month | None:
        """The month of a partition's table name (``None``: not a month partition)."""
        match = _NAME.fullmatch(name)
        if match is None:
            return None
        start = dt.datetime(int(match[1]), int(match[2]), 1, tzinfo=dt.UTC)
        return cls(name, start, next_month(start))


def next_month(start: dt.datetime) -> dt.datetime:
    return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)


@dataclass(frozen=True)
class Export:
    """A month recorded as exported: how many events, up to which sequence number."""

    month: Month
    events: int
    last_sequence: int | None


def months(session: orm.Session) -> list[Month]:
    """The month partitions that exist, oldest first."""
    found = (Month.named(name) for name in session.execute(_PARTITIONS).scalars())
    return sorted((m for m in found if m is not None), key=lambda m: m.start)


@contextlib.contextmanager
def lock_wait_bounded(session: orm.Session) -> Iterator[None]:
    """For the rest of the session's transaction, wait at most ``LOCK_WAIT_MS`` for any lock
    (a transaction-local ``lock_timeout``); a lock not granted by then, inside the block,
    raises ``AuditLogBusy`` and leaves the transaction to be rolled back."""
    db.wait_for_locks_at_most(session, LOCK_WAIT_MS)
    try:
        yield
    except sa_exc.OperationalError as exc:
        if db.sqlstate(exc) != db.LOCK_NOT_AVAILABLE:
            raise
        raise errors.AuditLogBusy(
            "the audit log is busy: an export or another long reader holds it (its lock was"
            f" not granted within {LOCK_WAIT_MS} ms); nothing was changed, retry once it is done"
        ) from exc


def ensure(
    session: orm.Session, *, since: dt.datetime | None = None, months_ahead: int = MONTHS_AHEAD
) -> int:
    """Create the month partitions from ``since`` (unset: now) to ``months_ahead`` months
    past the current one that do not exist yet; how many were created. ``Conflict`` when a
    month cannot be made because its events wait in the default partition."""
    params = {"from_": since or dt.datetime.now(dt.UTC), "months_ahead": months_ahead}
    try:
        return int(session.execute(_ENSURE, params).scalar_one())
    except sa_exc.IntegrityError as exc:
        if db.sqlstate(exc) != _CHECK_VIOLATION:
            raise
        raise errors.Conflict(
            "a month to be made has events in the default partition (audit_events_default),"
            " written while it was missing: move them out, then the month can be made"
        ) from None


def events(
    session: orm.Session, *, before: dt.datetime, after_sequence: int | None, batch: int = 1000
) -> Iterator[audit.AuditEvent]:
    """Every event that occurred before ``before`` with a sequence number above
    ``after_sequence``, in sequence order, read from a server-side cursor ``batch`` rows at a
    time."""
    event = _EVENTS.c
    query = sa.select(_EVENTS).where(event.occurred_at < before).order_by(event.sequence)
    if after_sequence is not None:
        query = query.where(event.sequence > after_sequence)
    result = session.execute(query, execution_options={"yield_per": batch}).mappings()
    for row in result:
        yield audit.event_of(row)


def current_month_start(session: orm.Session) -> dt.datetime:
    """The first instant of the current month (UTC) on the database clock."""
    start: dt.datetime = session.execute(_MONTH_START).scalar_one()
    return start


def hold(session: orm.Session, month: Month) -> None:
    """Keep writers out of the month's partition until the transaction ends (``SHARE``: what
    is counted next is what is dropped), once those already writing there committed."""
    session.execute(sa.text(f"LOCK TABLE {_partition(month)} IN SHARE MODE"))


def count(session: orm.Session, month: Month) -> tuple[int, int | None]:
    """The events of ``month`` and its highest sequence number."""
    event = _EVENTS.c
    row = session.execute(
        sa.select(sa.func.count(), sa.func.max(event.sequence)).where(
            event.occurred_at >= month.start, event.occurred_at < month.end
        )
    ).one()
    return int(row[0]), row[1]


def record_export(session: orm.Session, month: Month, events: int, last: int | None) -> None:
    """Record ``month`` as exported (again: the newer count replaces the older)."""
    values = {"range_start": month.start, "range_end": month.end, "events": events}
    statement = pg.insert(_EXPORTS).values(partition_name=month.name, last_sequence=last, **values)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[_EXPORTS.c.partition_name],
            set_={**values, "last_sequence": last, "exported_at": sa.func.clock_timestamp()},
        )
    )


def exports(session: orm.Session) -> dict[str, Export]:
    """The months recorded as exported, by partition name."""
    found: dict[str, Export] = {}
    for row in session.execute(sa.select(_EXPORTS)).mappings():
        month = Month(row["partition_name"], row["range_start"], row["range_end"])
        found[month.name] = Export(month, row["events"], row["last_sequence"])
    return found


def drop(session: orm.Session, month: Month) -> None:
    """Detach the month's partition and drop it, with its events (the owner's session)."""
    partition = _partition(month)
    session.execute(sa.text(f"ALTER TABLE occ.audit_events DETACH PARTITION {partition}"))
    session.execute(sa.text(f"DROP TABLE {partition}"))


def _partition(month: Month) -> str:
    """The month's partition as SQL names it (its name checked: it is written into the SQL)."""
    if _NAME.fullmatch(month.name) is None:
        raise ValueError("not a month partition")
    return f'occ."{month.name}"'
