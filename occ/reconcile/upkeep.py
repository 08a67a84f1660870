"""Upkeep of the database: history nothing reads any more is removed (``occ.prune``).

A run first makes sure the audit log's month partitions exist ahead of time
(``audit_partitions.ensure``: this month and the next two; while a long reader holds the log,
the next run does, ``worker.audit-partitions-deferred``), then walks the terminal work rows
of each outcome past its retention (``Retention``, from ``OCC_WORK_RETENTION_SUCCEEDED_DAYS``
and ``OCC_WORK_RETENTION_FAILED_DAYS``), then the idempotency records past their 24 hours, in
batches of ``BATCH`` rows, each batch a transaction of its own: no prune holds row locks or a
snapshot for longer than one batch, and the claim and the transitions skip past it. A run
stops after ``RUN_BUDGET_S``; the next one starts again from the oldest rows (what the last
removed is gone, what it kept is read again).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import audit_partitions, idempotency, retention, values
from occ.state.db import Database, Session
from occ.telemetry import observability

BATCH: Final = 50
"""Rows a batch removes at most (one short transaction). Small, because a claim beside a batch
shares the database's cores and write-ahead log with it: the shorter the batch, the less a
claim that meets one waits (``bench/intent.py``)."""
PAUSE: Final = 5.0
"""After each batch a run rests this many times as long as the batch took, so a prune holds
at most a sixth of one database connection's time. The prune phase of ``bench/intent.py``,
settings side by side (claim p99 beside a prune / without one, rows a second): 100 rows
resting 3x: 1.13x to 1.22x in four runs, about 6,000 rows/s; 50 rows resting 5x: 1.08x and
1.09x, about 2,100 rows/s; 25 rows resting 3x: 1.06x and 1.13x. 2,000 rows a second is some
30 million a day at one 10 s run a minute, far beyond what a fleet's history grows by
(docs/operations.md, Disk per Agent-day)."""
RUN_BUDGET_S: Final = 10.0
"""How long one run prunes before it leaves the rest to the next (well inside the control
tasks' 30 s soft limit)."""
DAY_MS: Final = 86_400_000

_Removed = TypeVar("_Removed")


@dataclass(frozen=True, kw_only=True)
class Retention:
    """How long each kind of history is kept, in milliseconds."""

    succeeded_ms: int
    failed_ms: int
    idempotency_ms: int = int(idempotency.RETENTION.total_seconds() * 1000)

    @classmethod
    def of(cls, settings: Settings) -> Retention:
        return cls(
            succeeded_ms=settings.work_retention_succeeded_days * DAY_MS,
            failed_ms=settings.work_retention_failed_days * DAY_MS,
        )


@dataclass(frozen=True)
class PruneReport:
    """What one run removed, and whether it reached the end of what had expired."""

    work: int
    idempotency: int
    batches: int
    finished: bool
    """False: the run's time budget ran out first (the next run goes on)."""

    @property
    def removed(self) -> int:
        return self.work + self.idempotency


def prune(
    database: Database,
    keep: Retention,
    *,
    batch: int = BATCH,
    budget_s: float = RUN_BUDGET_S,
    pause: float = PAUSE,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> PruneReport:
    """Create the audit months ahead (unless the audit log is busy), then remove expired work
    history and idempotency records, a batch per transaction, resting ``pause`` times as long
    as each batch took."""
    deadline = clock() + budget_s

    def rested(remove: Callable[[Session], _Removed]) -> _Removed:
        started = clock()
        with database.transaction() as session:
            removed = remove(session)
        sleep((clock() - started) * pause)
        return removed

    try:
        with database.transaction() as session, audit_partitions.lock_wait_bounded(session):
            audit_partitions.ensure(session)
    except errors.AuditLogBusy:  # the months are made ahead: a later run makes them
        observability.log(
            "worker.audit-partitions-deferred",
            level=logging.WARNING,
            reason=f"a long reader held the audit log past {audit_partitions.LOCK_WAIT_MS} ms",
        )
    except errors.Conflict as blocked:  # an operator's to clear; the history is pruned meanwhile
        observability.log(
            "worker.audit-partitions-failed", level=logging.ERROR, reason=str(blocked)
        )
    work = batches = 0
    for state, older_than_ms in (
        (values.WorkState.SUCCEEDED, keep.succeeded_ms),
        (values.WorkState.FAILED_PERMANENT, keep.failed_ms),
    ):
        after: retention.Position | None = None
        while True:
            if clock() >= deadline:
                return PruneReport(work, 0, batches, finished=False)
            done = rested(
                functools.partial(
                    retention.prune_work,
                    state=state,
                    older_than_ms=older_than_ms,
                    after=after,
                    limit=batch,
                )
            )
            work, batches, after = work + done.pruned, batches + 1, done.position
            if done.scanned < batch:
                break
    records = 0
    while clock() < deadline:
        removed = rested(
            functools.partial(
                retention.prune_idempotency, older_than_ms=keep.idempotency_ms, limit=batch
            )
        )
        records, batches = records + removed, batches + 1
        if removed < batch:
            return PruneReport(work, records, batches, finished=True)
    return PruneReport(work, records, batches, finished=False)
