"""The column types and key factories the table declarations share.

Text ids, database-set timestamps, the Namespace reference, the keys of a row named in a
Namespace, the ``(scope, id)`` foreign keys that keep references inside one Namespace (or
Agent), and the index that pages live rows by creation.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import sqlalchemy as sa
from sqlalchemy import orm

Name = sa.Text(collation="C")
Id = Annotated[str, orm.mapped_column(primary_key=True)]
"""A table's text primary key."""
Stamped = Annotated[dt.datetime, orm.mapped_column(server_default=sa.text("clock_timestamp()"))]
"""A timestamp the database sets when it writes the row (``created_at``, ``updated_at``)."""
InNamespace = Annotated[str, orm.mapped_column(sa.ForeignKey("namespaces.id"))]
"""The Namespace a row belongs to (``Mapped[InNamespace | None]``: a scope it may have)."""


def named_in_namespace(table: str) -> tuple[sa.UniqueConstraint, sa.UniqueConstraint, sa.Index]:
    """The keys of a table whose rows are named in a Namespace: one name per Namespace, the
    ``(namespace_id, id)`` key that references from the same Namespace point at, and the index
    that pages a Namespace's rows by creation."""
    return (
        sa.UniqueConstraint("namespace_id", "name"),
        sa.UniqueConstraint("namespace_id", "id"),
        sa.Index(f"{table}_namespace_created", "namespace_id", "created_at", "id"),
    )


def scoped_key(
    name: str, columns: tuple[str, str], parent: str, scope: str, **options: Any
) -> sa.ForeignKeyConstraint:
    """The foreign key ``name``: ``columns`` name a row of ``parent`` by its ``(scope, id)``
    key, so that a reference cannot cross into another Namespace (or Agent)."""
    return sa.ForeignKeyConstraint(
        list(columns), [f"{parent}.{scope}", f"{parent}.id"], name=name, **options
    )


def live_by_creation(table: str, *, ended: str) -> sa.Index:
    """The index that pages a table's rows whose ``ended`` timestamp is unset by creation."""
    return sa.Index(
        f"{table}_live_created", "created_at", "id", postgresql_where=sa.text(f"{ended} IS NULL")
    )
