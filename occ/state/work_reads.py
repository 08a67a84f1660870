"""Operator reads of the work queue: filtered keyset pages of items, the backlog, how far a
deployment has come (from its evidence, for the worker's ``worker.completed``) and the names of
the items' owners (what Flower shows of a dispatched task).

Read-only; takes the caller's session and never commits. The queue's transitions and the
conversion of a row into a ``WorkItem`` belong to ``occ.state.work_queue``; this module only
selects rows and hands them to that conversion.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import keyset, models, rows, values, work_keys, work_rows
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
    window: keyset.Window,
    *,
    state: values.WorkState | None = None,
    namespace_id: str | None = None,
    agent_id: str | None = None,
) -> list[values.WorkItem]:
    """The items of ``window`` (``keyset.NEWEST_FIRST``) that match every given filter."""
    where = rows.given(_WORK, state=state, namespace_id=namespace_id, agent_id=agent_id)
    query = keyset.NEWEST_FIRST.window(sa.select(_WORK).where(*where), _WORK, window)
    # the queue's own row conversion: one WorkItem conversion for every reader
    return [work_rows.item_of(row) for row in session.execute(query).mappings()]


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


@dataclass(frozen=True, kw_only=True)
class DeployProgress:
    """How far one item's deployment has come, from its evidence, on the database clock."""

    passes: int
    """Passes that ended with a transition (each writes one evidence row), this one included."""
    elapsed_ms: float
    """Since the item was admitted."""
    readiness_wait_ms: float
    """Since a pass first found the runtime not ready (``REVISION_INCOMPLETE``); 0 if none did."""


_DEPLOY_PROGRESS: Final = sa.text("""
    SELECT count(a.sequence) AS passes,
           extract(epoch FROM clock_timestamp() - w.created_at) * 1000 AS elapsed_ms,
           coalesce(extract(epoch FROM clock_timestamp() - min(a.occurred_at)
                    FILTER (WHERE a.details ->> 'reasonCode' = 'REVISION_INCOMPLETE')) * 1000, 0)
             AS readiness_wait_ms
      FROM occ.controller_work w
      LEFT JOIN occ.audit_events a ON a.work_id = w.id AND a.action = 'reconcile'
     WHERE w.id = :work_id
     GROUP BY w.created_at
""")


def deploy_progress(session: orm.Session, work_id: str) -> DeployProgress | None:
    """The item's ``DeployProgress``; ``None`` when the item is gone."""
    row = session.execute(_DEPLOY_PROGRESS, {"work_id": work_id}).mappings().first()
    if row is None:
        return None
    return DeployProgress(
        passes=int(row["passes"]),
        elapsed_ms=round(float(row["elapsed_ms"]), 1),
        readiness_wait_ms=round(float(row["readiness_wait_ms"]), 1),
    )


def owner_names(session: orm.Session, owners: Iterable[values.WorkOwner]) -> dict[str, str]:
    """The names of the owners' Namespaces and Agents by id (a row that is gone is left out)."""
    owners = list(owners)
    namespace_ids = sorted({owner.namespace_id for owner in owners})
    agent_ids = sorted({owner.agent_id for owner in owners if owner.agent_id is not None})
    statement = sa.union_all(
        sa.select(models.Namespace.id, models.Namespace.name).where(
            models.Namespace.id.in_(namespace_ids)
        ),
        sa.select(models.Agent.id, models.Agent.name).where(models.Agent.id.in_(agent_ids)),
    )
    return {row.id: row.name for row in session.execute(statement)}
