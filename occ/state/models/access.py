"""The tables of IAM policy: roles, the bindings that grant them, and restrictions that deny."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state.models.base import Base
from occ.state.models.columns import Id, InNamespace, Name, Stamped, live_by_creation


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
