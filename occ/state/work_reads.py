"""Operator reads of the work queue: filtered keyset pages of items, and the backlog.

Read-only; takes the caller's session and never commits. The queue's transitions and the
conversion of a row into a ``WorkItem`` belong to ``occ.state.work_queue``; this module only
selects rows and hands them to that conversion.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

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


def backlog(session: orm.Session) -> Backlog:
    """The pending count and the oldest pending item's age, on the database clock."""
    work = _WORK.c
    row = session.execute(
        sa.select(
            sa.func.count(),
            sa.func.coalesce(
                sa.func.extract("epoch", sa.func.clock_timestamp() - sa.func.min(work.created_at)),
                0,
            ),
        ).where(work.state.in_(_PENDING))
    ).one()
    return Backlog(pending=int(row[0]), oldest_age_s=float(row[1]))
