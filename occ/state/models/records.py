"""The tables of what happened: audit events, the exported months of them, and the stored
answers of idempotent requests."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state.models.base import Base
from occ.state.models.columns import Id, Stamped


class AuditEvent(Base):
    # partitioned by month of occurred_at (migration 0018): the keys include it
    __tablename__ = "audit_events"
    __table_args__ = (
        sa.UniqueConstraint("sequence", "occurred_at", name="audit_events_sequence_key"),
        sa.Index("audit_events_namespace", "namespace_id", "sequence"),
        sa.Index("audit_events_resource", "resource_id", "sequence"),
        sa.Index("audit_events_work", "work_id", "sequence"),
        sa.Index(
            "audit_events_hidden_denials",
            "actor_id",
            "resource_kind",
            "occurred_at",
            postgresql_where=sa.text("kind = 'authorization_denial' AND details ? 'hiddenDenials'"),
        ),
        {"postgresql_partition_by": "RANGE (occurred_at)"},
    )

    id: orm.Mapped[Id]
    sequence: orm.Mapped[int] = orm.mapped_column(sa.Identity(always=True))
    occurred_at: orm.Mapped[Stamped] = orm.mapped_column(primary_key=True)
    kind: orm.Mapped[str]
    action: orm.Mapped[str]
    actor_id: orm.Mapped[str]
    namespace_id: orm.Mapped[str | None]
    resource_kind: orm.Mapped[str | None]
    resource_id: orm.Mapped[str | None]
    work_id: orm.Mapped[str | None]
    outcome: orm.Mapped[str]
    details: orm.Mapped[dict[str, Any]] = orm.mapped_column(server_default=sa.text("'{}'::jsonb"))


class AuditExport(Base):
    """A month of audit events exported (``occ audit export``), which may then be dropped."""

    __tablename__ = "audit_exports"

    partition_name: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    range_start: orm.Mapped[dt.datetime]
    range_end: orm.Mapped[dt.datetime]
    events: orm.Mapped[int]
    last_sequence: orm.Mapped[int | None]
    exported_at: orm.Mapped[Stamped]


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (sa.Index("idempotency_keys_created_at", "created_at"),)

    principal_id: orm.Mapped[Id]
    route: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    key: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    fingerprint: orm.Mapped[str]
    response_status: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    response_body: orm.Mapped[Any | None] = orm.mapped_column(pg.JSONB)
    response_location: orm.Mapped[str | None]
    created_at: orm.Mapped[Stamped]
