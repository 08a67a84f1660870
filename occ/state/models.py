"""SQLAlchemy tables of the ``occ`` schema; no behaviour.

The migration in ``alembic/versions`` is the authority for CHECK constraints, triggers,
grants and functions; these declarations mirror its tables, keys and indexes so that
``alembic check`` stays clean.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state.columns import (
    Id,
    InNamespace,
    Name,
    Stamped,
    live_by_creation,
    named_in_namespace,
    scoped_key,
)


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(schema="occ")
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        str: sa.Text,
        int: sa.BigInteger,
        dt.datetime: sa.DateTime(timezone=True),
        dict[str, Any]: pg.JSONB,
    }


class Installation(Base):
    __tablename__ = "installation"
    __table_args__ = (sa.UniqueConstraint("singleton", name="installation_singleton"),)

    id: orm.Mapped[Id]
    name: orm.Mapped[str] = orm.mapped_column(Name)
    singleton: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, server_default=sa.true())
    created_at: orm.Mapped[Stamped]


class Namespace(Base):
    __tablename__ = "namespaces"
    __table_args__ = (
        sa.Index(
            "namespaces_existing_namespace_live",
            "existing_namespace",
            unique=True,
            postgresql_where=sa.text("existing_namespace IS NOT NULL AND deleted_at IS NULL"),
        ),
        live_by_creation("namespaces", ended="deleted_at"),
    )

    id: orm.Mapped[Id]
    name: orm.Mapped[str] = orm.mapped_column(Name, unique=True)
    existing_namespace: orm.Mapped[str | None]
    status: orm.Mapped[str] = orm.mapped_column(server_default="provisioning")
    created_by: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]
    deleted_at: orm.Mapped[dt.datetime | None]


class Principal(Base):
    __tablename__ = "principals"
    __table_args__ = (sa.Index("principals_created", "created_at", "id"),)

    id: orm.Mapped[Id]
    name: orm.Mapped[str] = orm.mapped_column(Name)
    kind: orm.Mapped[str]
    namespace_id: orm.Mapped[InNamespace | None]
    agent_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.ForeignKey(
            "agents.id",
            deferrable=True,
            initially="DEFERRED",
            name="principals_agent_id_fkey",
            use_alter=True,
        ),
        unique=True,
    )
    created_at: orm.Mapped[Stamped]
    disabled_at: orm.Mapped[dt.datetime | None]


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (sa.Index("api_keys_principal_created", "principal_id", "created_at", "id"),)

    id: orm.Mapped[Id]
    principal_id: orm.Mapped[str] = orm.mapped_column(sa.ForeignKey("principals.id"))
    secret_hash: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    revoked_at: orm.Mapped[dt.datetime | None]
    last_used_at: orm.Mapped[dt.datetime | None]


class PrincipalIdentity(Base):
    __tablename__ = "principal_identities"
    __table_args__ = (sa.Index("principal_identities_principal", "principal_id"),)

    issuer: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    subject: orm.Mapped[str] = orm.mapped_column(primary_key=True)
    principal_id: orm.Mapped[str] = orm.mapped_column(sa.ForeignKey("principals.id"))
    created_at: orm.Mapped[Stamped]


class UserSession(Base):
    __tablename__ = "user_sessions"
    __table_args__ = (
        sa.Index("user_sessions_principal_created", "principal_id", "created_at", "id"),
    )

    id: orm.Mapped[Id]
    principal_id: orm.Mapped[str] = orm.mapped_column(sa.ForeignKey("principals.id"))
    issuer: orm.Mapped[str]
    token_hash: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    last_seen_at: orm.Mapped[Stamped]
    expires_at: orm.Mapped[dt.datetime]
    revoked_at: orm.Mapped[dt.datetime | None]


class Role(Base):
    __tablename__ = "roles"
    __table_args__ = (
        sa.Index(
            "roles_installation_name",
            "name",
            unique=True,
            postgresql_where=sa.text("namespace_id IS NULL AND deleted_at IS NULL"),
        ),
        sa.Index(
            "roles_namespace_name",
            "namespace_id",
            "name",
            unique=True,
            postgresql_where=sa.text("namespace_id IS NOT NULL AND deleted_at IS NULL"),
        ),
        live_by_creation("roles", ended="deleted_at"),
    )

    id: orm.Mapped[Id]
    name: orm.Mapped[str] = orm.mapped_column(Name)
    namespace_id: orm.Mapped[InNamespace | None]
    permissions: orm.Mapped[list[str]] = orm.mapped_column(pg.ARRAY(sa.Text))
    created_at: orm.Mapped[Stamped]
    deleted_at: orm.Mapped[dt.datetime | None]


class AccessBinding(Base):
    __tablename__ = "access_bindings"
    __table_args__ = (
        sa.Index("access_bindings_principal", "principal_id"),
        sa.Index("access_bindings_resource", "resource_id"),
        live_by_creation("access_bindings", ended="revoked_at"),
    )

    id: orm.Mapped[Id]
    role_id: orm.Mapped[str] = orm.mapped_column(sa.ForeignKey("roles.id"))
    principal_id: orm.Mapped[str] = orm.mapped_column(sa.ForeignKey("principals.id"))
    namespace_id: orm.Mapped[InNamespace | None]
    resource_kind: orm.Mapped[str | None]
    resource_id: orm.Mapped[str | None]
    created_by: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    revoked_at: orm.Mapped[dt.datetime | None]


class Restriction(Base):
    __tablename__ = "restrictions"
    __table_args__ = (sa.Index("restrictions_created", "created_at", "id"),)

    id: orm.Mapped[Id]
    permission: orm.Mapped[str]
    principal_id: orm.Mapped[str | None] = orm.mapped_column(sa.ForeignKey("principals.id"))
    namespace_id: orm.Mapped[InNamespace | None]
    resource_id: orm.Mapped[str | None]
    created_by: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]


class _NamedInNamespace:
    """A row named in a Namespace: its id, Namespace and name lead its columns, with the keys
    of ``named_in_namespace``."""

    __tablename__: Any

    id: orm.Mapped[Id] = orm.mapped_column(sort_order=-3)
    namespace_id: orm.Mapped[InNamespace] = orm.mapped_column(sort_order=-2)
    name: orm.Mapped[str] = orm.mapped_column(Name, sort_order=-1)

    @orm.declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        return named_in_namespace(cls.__tablename__)


class Configuration(_NamedInNamespace, Base):
    __tablename__ = "configurations"

    document: orm.Mapped[dict[str, Any]]
    generation: orm.Mapped[int] = orm.mapped_column(server_default="1")
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]


class Secret(_NamedInNamespace, Base):
    __tablename__ = "secrets"

    value_ciphertext: orm.Mapped[bytes] = orm.mapped_column(sa.LargeBinary)
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]


class Account(_NamedInNamespace, Base):
    __tablename__ = "accounts"

    backend_id: orm.Mapped[str]
    driver: orm.Mapped[str]
    workspace: orm.Mapped[str]
    created_by: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]
    withdrawn_at: orm.Mapped[dt.datetime | None]


class Agent(_NamedInNamespace, Base):
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


class NamespaceQuota(Base):
    """An administrator's overrides of a Namespace's quotas (migration 0023); a ``NULL`` limit
    is the installation's default."""

    __tablename__ = "namespace_quotas"

    namespace_id: orm.Mapped[str] = orm.mapped_column(
        sa.ForeignKey("namespaces.id"), primary_key=True
    )
    agents: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    revisions_per_agent: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    secrets: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    configurations: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    updated_by: orm.Mapped[str]
    updated_at: orm.Mapped[Stamped]
