"""The declarative base of the ``occ`` schema's tables, and the columns every row named in a
Namespace leads with."""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state.models.columns import Id, InNamespace, Name, named_in_namespace


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(schema="occ")
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        str: sa.Text,
        int: sa.BigInteger,
        dt.datetime: sa.DateTime(timezone=True),
        dict[str, Any]: pg.JSONB,
    }


class NamedInNamespace:
    """A row named in a Namespace: its id, Namespace and name lead its columns, with the keys
    of ``named_in_namespace``."""

    __tablename__: Any

    id: orm.Mapped[Id] = orm.mapped_column(sort_order=-3)
    namespace_id: orm.Mapped[InNamespace] = orm.mapped_column(sort_order=-2)
    name: orm.Mapped[str] = orm.mapped_column(Name, sort_order=-1)

    @orm.declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        return named_in_namespace(cls.__tablename__)
