"""What the use-case tests share: reading back rows, audit events and work items."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from occ.state import audit, models, values, work_queue
from occ.state.db import Database


def count(db: Database, model: type[models.Base]) -> int:
    """How many rows the table of ``model`` holds."""
    with db.transaction() as session:
        return int(session.scalar(sa.select(sa.func.count()).select_from(model)) or 0)


def events(db: Database, **filters: Any) -> list[audit.AuditEvent]:
    """The audit events ``filters`` select (as ``audit.list_events`` takes them)."""
    with db.transaction() as session:
        return audit.list_events(session, **filters)


def work(db: Database, work_id: str) -> values.WorkItem | None:
    """The work item ``work_id``, or ``None``."""
    with db.transaction() as session:
        return work_queue.get(session, work_id)
