"""The tables of who calls: principals, their API keys, the sign-in identities that map to them,
and their browser sessions."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state.models.base import Base
from occ.state.models.columns import Id, InNamespace, Name, Stamped


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
