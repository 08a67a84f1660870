"""Retention of history: batches that remove terminal work rows and stale idempotency records.

Each call removes at most ``limit`` rows in the caller's transaction, oldest first, skipping
rows another transaction holds; the use case (``occ.reconcile.upkeep``) commits each batch
before the next, so no prune holds locks or a snapshot for long. Work rows are removed through
``occ.prune_work`` (migrations 0015 and 0026), which keeps the rows something still reads: the
newest row of each lane, kind and outcome, the newest deployment of a lane that activated its
revision (a failed deploy rolls back to it), and the deployment of each Agent's active
revision.
Takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final

from sqlalchemy import orm

from occ.state import queries, values

SQL: Final = queries.load("retention.sql")


@dataclass(frozen=True)
class Position:
    """Where a walk over one outcome's terminal rows stopped: the last row it looked at."""

    finished: dt.datetime
    work_id: str


@dataclass(frozen=True)
class WorkBatch:
    """What one batch of a work prune did."""

    pruned: int
    scanned: int
    """Rows looked at (kept ones included): fewer than the limit means the walk is over."""
    position: Position | None
    """Resume after this (``None``: nothing was looked at)."""


def prune_work(
    session: orm.Session,
    state: values.WorkState,
    *,
    older_than_ms: int,
    after: Position | None,
    limit: int,
) -> WorkBatch:
    """Remove up to ``limit`` rows of ``state`` that finished more than ``older_than_ms`` ago,
    after ``after``, keeping the rows something still reads."""
    if state not in (values.WorkState.SUCCEEDED, values.WorkState.FAILED_PERMANENT):
        raise ValueError("only terminal work is pruned")
    params = {
        "state": state.value,
        "older_than_ms": older_than_ms,
        "after_finished": None if after is None else after.finished,
        "after_id": None if after is None else after.work_id,
        "limit": limit,
    }
    row = session.execute(SQL["prune_work"], params).one()
    position = None if row.last_id is None else Position(row.last_finished, row.last_id)
    return WorkBatch(pruned=row.pruned, scanned=row.scanned, position=position)


def prune_idempotency(session: orm.Session, *, older_than_ms: int, limit: int) -> int:
    """Remove up to ``limit`` idempotency records older than ``older_than_ms``; how many."""
    result = session.execute(
        SQL["prune_idempotency"], {"older_than_ms": older_than_ms, "limit": limit}
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
