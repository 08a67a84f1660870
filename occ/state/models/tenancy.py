"""The tables of the installation and its Namespaces: the installation row, the Namespaces, and
an administrator's quota overrides of a Namespace."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state.models.base import Base
from occ.state.models.columns import Id, Name, Stamped, live_by_creation


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
