"""The tables of the resources an Agent references, each named in a Namespace: Configurations,
Secrets and managed accounts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state.models.base import Base, NamedInNamespace
from occ.state.models.columns import Stamped


class Configuration(NamedInNamespace, Base):
    __tablename__ = "configurations"

    document: orm.Mapped[dict[str, Any]]
    generation: orm.Mapped[int] = orm.mapped_column(server_default="1")
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]


class Secret(NamedInNamespace, Base):
    __tablename__ = "secrets"

    value_ciphertext: orm.Mapped[bytes] = orm.mapped_column(sa.LargeBinary)
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]


class Account(NamedInNamespace, Base):
    __tablename__ = "accounts"

    backend_id: orm.Mapped[str]
    driver: orm.Mapped[str]
    workspace: orm.Mapped[str]
    created_by: orm.Mapped[str]
    created_at: orm.Mapped[Stamped]
    updated_at: orm.Mapped[Stamped]
    withdrawn_at: orm.Mapped[dt.datetime | None]
