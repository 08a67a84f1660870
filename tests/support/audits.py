"""Counting audit events, for the tests that assert how often something happened, and the
headline of one event.

Reads only (as occ_app, in a transaction of its own); which events count is the caller's.
"""

from __future__ import annotations

import sqlalchemy as sa

from occ.state import audit, models
from occ.state.db import Database


def count(db: Database, *conditions: sa.ColumnElement[bool]) -> int:
    """How many audit events meet every condition (on ``models.AuditEvent`` columns)."""
    with db.transaction() as session:
        return int(
            session.execute(
                sa.select(sa.func.count()).select_from(models.AuditEvent).where(*conditions)
            ).scalar_one()
        )


def reconcile_passes(db: Database, work_id: str) -> int:
    """How many passes the work item has had (each audits one ``reconcile`` event)."""
    return count(db, models.AuditEvent.work_id == work_id, models.AuditEvent.action == "reconcile")


def headline(event: audit.AuditEvent) -> tuple[str, str, str, str]:
    """What happened, in the order assertions name it: kind, action, actor and outcome."""
    return (event.kind, event.action, event.actor_id, event.outcome)
