"""The table of the durable work queue."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state.models.base import Base
from occ.state.models.columns import Id, InNamespace, scoped_key


class ControllerWork(Base):
    # fillfactor 80 (migration 0010): a claim's start and renewals are heap-only updates, so
    # no index may cover the lease
    __tablename__ = "controller_work"
    __table_args__ = (
        scoped_key(
            "controller_work_agent_fkey",
            ("namespace_id", "agent_id"),
            "agents",
            "namespace_id",
            deferrable=True,
            initially="DEFERRED",
        ),
        scoped_key(
            "controller_work_revision_fkey",
            ("agent_id", "revision_id"),
            "agent_revisions",
            "agent_id",
            deferrable=True,
            initially="DEFERRED",
        ),
        sa.Index(
            "controller_work_ready",
            "priority",
            "available_at",
            "created_at",
            "id",
            postgresql_include=["lane", "attempt_count"],
            postgresql_where=sa.text("state = 'queued'"),
        ),
        sa.Index(
            "controller_work_one_claim_per_lane",
            "lane",
            unique=True,
            postgresql_where=sa.text("state = 'claimed'"),
        ),
        sa.Index(
            "controller_work_finished",
            "state",
            "completed_at",
            "id",
            postgresql_where=sa.text("completed_at IS NOT NULL"),
        ),
        sa.Index(
            "controller_work_lane_finished",
            "lane",
            "kind",
            "state",
            "completed_at",
            "id",
            postgresql_where=sa.text("completed_at IS NOT NULL"),
        ),
        sa.Index("controller_work_agent", "agent_id", "revision_id"),
        sa.Index("controller_work_namespace", "namespace_id"),
    )

    id: orm.Mapped[Id]
    kind: orm.Mapped[str]
    namespace_id: orm.Mapped[InNamespace]
    agent_id: orm.Mapped[str | None]
    revision_id: orm.Mapped[str | None]
    actor_id: orm.Mapped[str]
    namespace_target: orm.Mapped[str | None]
    agent_target: orm.Mapped[str | None]
    lane: orm.Mapped[str] = orm.mapped_column(
        sa.Computed("COALESCE(agent_id, namespace_id)", persisted=True)
    )
    priority: orm.Mapped[int] = orm.mapped_column(
        sa.SmallInteger, sa.Computed("occ.work_priority(kind)", persisted=True)
    )
    state: orm.Mapped[str] = orm.mapped_column(server_default="queued")
    attempt_count: orm.Mapped[int] = orm.mapped_column(sa.Integer, server_default="0")
    available_at: orm.Mapped[dt.datetime]
    claim_token: orm.Mapped[uuid.UUID | None] = orm.mapped_column(pg.UUID(as_uuid=True))
    claimed_at: orm.Mapped[dt.datetime | None]
    started_at: orm.Mapped[dt.datetime | None]
    lease_expires_at: orm.Mapped[dt.datetime | None]
    completed_at: orm.Mapped[dt.datetime | None]
    reason_code: orm.Mapped[str | None]
    result_data: orm.Mapped[dict[str, Any] | None]
    last_progress_code: orm.Mapped[str | None]
    last_progress_at: orm.Mapped[dt.datetime | None]
    created_at: orm.Mapped[dt.datetime]
    updated_at: orm.Mapped[dt.datetime]
