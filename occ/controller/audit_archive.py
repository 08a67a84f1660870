"""The audit log's history a month at a time: export the months before a date as events in
sequence order, and drop months once exported (``occ audit export`` and ``occ audit
drop-partition``, which the database owner runs).

A drop refuses a month that was never exported, or that gained events since its export,
unless forced; it detaches and drops the month's partition and audits itself
(``audit.partition.drop``) in the same transaction. The current month and later ones are
never dropped. A drop waits for the log only briefly: beside a long reader (an export still
streaming) it gives up (``AuditLogBusy``) rather than hold every audit write up behind it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from occ.foundation import errors
from occ.state import audit, audit_partitions, installation
from occ.state.db import Database

DROP_ACTION: Final = "audit.partition.drop"
OPERATOR: Final = "operator"
"""The actor of a drop before bootstrap (after it, the Installation's id)."""


@dataclass(frozen=True)
class Exported:
    """What an export wrote, and the months it recorded as exported."""

    events: int
    last_sequence: int | None
    months: tuple[str, ...]


@dataclass(frozen=True)
class Dropped:
    """The months a drop removed, and how many events went with them."""

    months: tuple[str, ...]
    events: int


def export(
    database: Database,
    *,
    before: dt.datetime,
    after_sequence: int | None,
    write: Callable[[audit.AuditEvent], None],
) -> Exported:
    """Hand every event that occurred before ``before`` after ``after_sequence`` to ``write``,
    in sequence order, from one snapshot streamed in batches; then record each month wholly
    before ``before`` as exported (only once the stream reached its end)."""
    written, last = 0, after_sequence
    with database.snapshot() as session:
        for event in audit_partitions.events(session, before=before, after_sequence=after_sequence):
            write(event)
            written, last = written + 1, event.sequence
    with database.transaction() as session:
        recorded = []
        for month in audit_partitions.months(session):
            if month.end <= before:
                events, top = audit_partitions.count(session, month)
                audit_partitions.record_export(session, month, events, top)
                recorded.append(month.name)
    return Exported(written, last, tuple(recorded))


def drop_partitions(database: Database, *, before: dt.datetime, force: bool) -> Dropped:
    """Drop the month partitions that end by ``before`` (and before the current month).

    Raises:
        Conflict: a month was not exported, or gained events since (unless ``force``).
        AuditLogBusy: a long reader holds the log (nothing was dropped).
    """
    with database.transaction() as session, audit_partitions.lock_wait_bounded(session):
        now = audit_partitions.current_month_start(session)
        months = [m for m in audit_partitions.months(session) if m.end <= min(before, now)]
        exported = audit_partitions.exports(session)
        for month in months:  # an event still being written there is counted, or waited for
            audit_partitions.hold(session, month)
        counted = {m.name: audit_partitions.count(session, m) for m in months}
        unexported = [
            m.name
            for m in months
            if m.name not in exported or exported[m.name].events != counted[m.name][0]
        ]
        if unexported and not force:
            raise errors.Conflict(
                "not exported (or changed since the export): "
                + ", ".join(unexported)
                + "; run occ audit export first, or drop with --force"
            )
        found = installation.current(session)
        actor = found.id if found is not None else OPERATOR
        for month in months:
            events = counted[month.name][0]
            audit_partitions.drop(session, month)
            audit.mutation(
                session,
                action=DROP_ACTION,
                actor_id=actor,
                resource_kind="audit_partition",
                resource_id=month.name,
                details={
                    "rangeStart": month.start.isoformat(),
                    "rangeEnd": month.end.isoformat(),
                    "events": events,
                    "exported": month.name not in unexported,
                },
            )
    return Dropped(tuple(m.name for m in months), sum(counted[m.name][0] for m in months))
