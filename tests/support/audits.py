"""Counting audit events, for the tests that assert how often something happened (or how
many passes ended with a code); the headline of one event; the authorization denials a work
item audited.

Reads only (as occ_app, in a transaction of its own); which events count is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def passes_ending(db: Database, work_ids: Iterable[str], code: str) -> dict[str, int]:
    """How many ``reconcile`` passes of each of ``work_ids`` ended with ``code`` (items with
    none are left out)."""
    with db.transaction() as session:
        rows = session.execute(
            sa.select(models.AuditEvent.work_id, sa.func.count())
            .where(
                models.AuditEvent.work_id.in_(list(work_ids)),
                models.AuditEvent.action == "reconcile",
                models.AuditEvent.details["reasonCode"].astext == code,
            )
            .group_by(models.AuditEvent.work_id)
        ).all()
    return {str(work_id): int(count) for work_id, count in rows}


def headline(event: audit.AuditEvent) -> tuple[str, str, str, str]:
    """What happened, in the order assertions name it: kind, action, actor and outcome."""
    return (event.kind, event.action, event.actor_id, event.outcome)


def denials(db: Database, work_id: str) -> list[tuple[str, str, str]]:
    """The authorization denials audited for ``work_id``: action, resource kind and reason
    code of each."""
    with db.transaction() as session:
        rows = session.execute(
            sa.select(
                models.AuditEvent.action,
                models.AuditEvent.resource_kind,
                models.AuditEvent.details["reasonCode"].astext,
            ).where(
                models.AuditEvent.kind == "authorization_denial",
                models.AuditEvent.work_id == work_id,
            )
        ).all()
    return [(row[0], row[1], row[2]) for row in rows]
