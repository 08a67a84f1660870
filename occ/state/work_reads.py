"""Operator reads of the work queue: filtered keyset pages of items, and the backlog.

Read-only; takes the caller's session and never commits. The queue's transitions and the
conversion of a row into a ``WorkItem`` belong to ``occ.state.work_queue``; this module only
selects rows and hands them to that conversion.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models, rows, values, work_keys, work_queue
from occ.state.work_keys import WorkKind

_WORK: Final = cast(sa.Table, models.ControllerWork.__table__)
_PENDING: Final = (values.WorkState.QUEUED, values.WorkState.CLAIMED)


@dataclass(frozen=True, kw_only=True)
class Backlog:
    """How much work is waiting: items queued or claimed, and the age of the oldest one."""

    pending: int
    oldest_age_s: float


def page(
    session: orm.Session,
    *,
    state: values.WorkState | None = None,
    namespace_id: str | None = None,
    agent_id: str | None = None,
    after: tuple[dt.datetime, str] | None = None,
    limit: int,
) -> list[values.WorkItem]:
    """Items matching every given filter, newest first (``created_at``, then id), at most
    ``limit``; ``after`` continues below that ``(created_at, id)`` position."""
    work = _WORK.c
    where = rows.given(_WORK, state=state, namespace_id=namespace_id, agent_id=agent_id)
    if after is not None:
        where.append(sa.tuple_(work.created_at, work.id) < after)
    query = (
        sa.select(_WORK).where(*where).order_by(work.created_at.desc(), work.id.desc()).limit(limit)
    )
    # the queue's own row conversion: one WorkItem conversion for every reader
    return [work_queue._item(row) for row in session.execute(query).mappings()]


def targets(kind: WorkKind) -> tuple[str | None, str | None]:
    """The ``(namespace_target, agent_target)`` an item of this kind carries (operators read
    them in the work representation)."""
    spec = work_keys.SPECS[kind]
    return spec.namespace_target, spec.agent_target


def _backlog_statement() -> sa.Select[Any]:
    work = _WORK.c
    queued, claimed = (
        sa.select(sa.func.count().label("n"), sa.func.min(work.created_at).label("oldest"))
        .where(work.state == state)
        .subquery()
        for state in _PENDING
    )
    oldest = sa.func.least(queued.c.oldest, claimed.c.oldest)
    return sa.select(
        queued.c.n + claimed.c.n,
        sa.func.coalesce(sa.func.extract("epoch", sa.func.clock_timestamp() - oldest), 0),
    ).select_from(queued.join(claimed, sa.true()))


BACKLOG: Final = _backlog_statement()
"""The pending count and the oldest pending item's age. Each state is read on its own partial
index (``controller_work_ready`` for queued items, ``controller_work_one_claim_per_lane`` for
claimed ones): the read costs what is pending, never what finished (a ``state IN (...)``
reads the whole table once it is mostly history)."""


def backlog(session: orm.Session) -> Backlog:
    """The pending count and the oldest pending item's age, on the database clock."""
    row = session.execute(BACKLOG).one()
    return Backlog(pending=int(row[0]), oldest_age_s=float(row[1]))
