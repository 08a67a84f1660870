"""Rows into values: a record from a row's columns, the first row or every row a query selects;
and the UPDATE that stamps the moment rows were disabled, revoked or soft-deleted.

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


def record(cls: type[D], row: sa.RowMapping | Mapping[str, Any], **converted: Any) -> D:
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


def stamped(table: sa.Table, column: str, *where: sa.ColumnElement[bool]) -> sa.Update:
    """The UPDATE that sets ``column`` to the current time on the rows ``where`` selects whose
    ``column`` is unset: an idempotent disable, revoke or soft delete that keeps the first
    moment."""
    return (
        sa.update(table)
        .where(*where, table.c[column].is_(None))
        .values({column: sa.func.clock_timestamp()})
    )


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))
