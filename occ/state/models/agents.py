"""The tables of Agents: the Agent, its immutable revisions, what the workers observed of its
runtime, the retired revisions, and how far each Compute Driver's fleet was observed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state.models.base import Base, NamedInNamespace
from occ.state.models.columns import Id, Stamped, named_in_namespace, scoped_key


class Agent(NamedInNamespace, Base):
    __tablename__ = "agents"
    __table_args__ = (
        *named_in_namespace("agents"),
        scoped_key(
            "agents_configuration_fkey",
            ("namespace_id", "configuration_id"),
            "configurations",
            "namespace_id",
        ),
        scoped_key(
            "agents_harness_auth_secret_fkey",
            ("namespace_id", "harness_auth_secret_id"),
            "secrets",
            "namespace_id",
        ),
        scoped_key(
            "agents_harness_auth_account_fkey",
            ("namespace_id", "harness_auth_account_id"),
            "accounts",
            "namespace_id",
        ),
        sa.Index(
            "agents_harness_auth_account",
            "harness_auth_account_id",
            postgresql_where=sa.text("harness_auth_account_id IS NOT NULL"),
        ),
        scoped_key(
            "agents_active_revision_fkey",
            ("id", "active_revision_id"),
            "agent_revisions",
            "agent_id",
            deferrable=True,
            initially="DEFERRED",
            use_alter=True,
        ),
        sa.Index(
            "agents_observed",
            "compute_driver",
            "observe_phase",
            postgresql_include=["active_revision_id"],
            postgresql_where=sa.text(
                "status = 'active' AND desired_runtime_state = 'running' "
                "AND active_revision_id IS NOT NULL"
            ),
        ),
    )

    configuration_id: orm.Mapped[str]
    harness_id: orm.Mapped[str]
    harness_version: orm.Mapped[str]
    execution_mode: orm.Mapped[str]
    harness_auth_secret_id: orm.Mapped[str | None]
    harness_auth_account_id: orm.Mapped[str | None]
    compute_driver: orm.Mapped[str]
    service_principal_id: orm.Mapped[str] = orm.mapped_column(
        sa.ForeignKey("principals.id", deferrable=True, initially="DEFERRED")
    )
    status: orm.Mapped[str] = orm.mapped_column(server_default="active")
    desired_runtime_state: orm.Mapped[str] = orm.mapped_column(server_default="stopped")
    active_revision_id: orm.Mapped[str | None]
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]
    endpoint: orm.Mapped[str | None]
    # the number the Agent's latest revision took (a deploy increments it under the row lock)
    revision_counter: orm.Mapped[int] = orm.mapped_column(server_default="0")
    # where in each observation interval the Agent's active revision is observed (migration
    # 0013): a stable hash of the id
    observe_phase: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, sa.Computed("mod(abs(hashtext(id)::bigint), 1000000)::integer", persisted=True)
    )


class AgentRevision(Base):
    __tablename__ = "agent_revisions"
    __table_args__ = (
        sa.UniqueConstraint("agent_id", "revision_number"),
        sa.UniqueConstraint("agent_id", "id"),
        scoped_key(
            "agent_revisions_agent_fkey", ("namespace_id", "agent_id"), "agents", "namespace_id"
        ),
    )

    id: orm.Mapped[Id]
    namespace_id: orm.Mapped[str]
    agent_id: orm.Mapped[str]
    revision_number: orm.Mapped[int]
    actor_id: orm.Mapped[str]
    configuration_id: orm.Mapped[str]
    configuration_generation: orm.Mapped[int]
    configuration_document: orm.Mapped[dict[str, Any]]
    harness_id: orm.Mapped[str]
    harness_version: orm.Mapped[str]
    harness_mode: orm.Mapped[str]
    compute_driver: orm.Mapped[str]
    harness_auth: orm.Mapped[dict[str, Any]]
    service_principal_id: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]


class AgentRuntime(Base):
    __tablename__ = "agent_runtime"
    __table_args__ = (
        scoped_key(
            "agent_runtime_revision_fkey",
            ("agent_id", "revision_id"),
            "agent_revisions",
            "agent_id",
            ondelete="CASCADE",
        ),
    )

    agent_id: orm.Mapped[str] = orm.mapped_column(
        sa.ForeignKey("agents.id", ondelete="CASCADE", name="agent_runtime_agent_fkey"),
        primary_key=True,
    )
    revision_id: orm.Mapped[str]
    status: orm.Mapped[str]
    reason_code: orm.Mapped[str]
    observed_at: orm.Mapped[Stamped]
    # consecutive repairs of the runtime, and when the next one may be enqueued
    repairs: orm.Mapped[int] = orm.mapped_column(sa.Integer, server_default="0")
    repair_after: orm.Mapped[dt.datetime | None]


class RevisionRetirement(Base):
    """A revision whose runtime a deploy pass retired (migration 0016)."""

    __tablename__ = "revision_retirements"
    __table_args__ = (
        scoped_key(
            "revision_retirements_revision_fkey",
            ("agent_id", "revision_id"),
            "agent_revisions",
            "agent_id",
            ondelete="CASCADE",
        ),
    )

    agent_id: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    revision_id: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    retired_at: orm.Mapped[Stamped]


class ObserverCursor(Base):
    """How far in time each Compute Driver's fleet was observed (migration 0013)."""

    __tablename__ = "observer_cursors"

    compute_driver: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    observed_until: orm.Mapped[dt.datetime]
    updated_at: orm.Mapped[Stamped]
