"""Rows into values: a record from a row's columns, the first row or every row a query selects;
and the one-time stamp that disables, revokes or soft-deletes a row.

The repositories' values are frozen dataclasses whose fields are named like the columns they
come from (or the keys of a JSON object a statement builds); a repository converts only what
needs it (an enum, a tuple, a copy of a JSON object) and passes it to ``record``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")
T = TypeVar("T")


def record(cls: type[D], row: Mapping[str, Any], **converted: Any) -> D:
    """A ``cls`` of the row's columns (or an object's keys) named like its fields,
    ``converted`` replacing some."""
    columns = {name: row[name] for name in _fields(cls) if name not in converted}
    return cls(**columns, **converted)


def first(
    session: orm.Session,
    query: sa.Select[Any],
    make: Callable[[sa.RowMapping], T],
    *,
    lock: bool = False,
) -> T | None:
    """The first row ``query`` selects made into a value, or ``None``; ``lock`` takes its row
    lock (``FOR UPDATE``)."""
    if lock:
        query = query.with_for_update()
    row = session.execute(query).mappings().first()
    return None if row is None else make(row)


def every(
    session: orm.Session, query: sa.Executable, make: Callable[[sa.RowMapping], T]
) -> list[T]:
    """Every row ``query`` selects (or a statement returns), in its order, made into values."""
    return [make(row) for row in session.execute(query).mappings()]


def stamp_once(session: orm.Session, table: sa.Table, row_id: str, column: str) -> None:
    """Set the row's ``column`` to the current time unless it is set already: an idempotent
    disable, revoke or soft delete that keeps the first moment."""
    session.execute(
        sa.update(table)
        .where(table.c.id == row_id, table.c[column].is_(None))
        .values({column: sa.func.clock_timestamp()})
    )


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))
