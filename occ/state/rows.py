"""Rows into values: a record from a row's columns, the first row or every row a query selects.

The repositories' values are frozen dataclasses whose fields are named like the columns they
come from; a repository converts only what needs it (an enum, a tuple, a copy of a JSON
object) and passes it to ``record``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")
T = TypeVar("T")


def record(cls: type[D], row: sa.RowMapping, **converted: Any) -> D:
    """A ``cls`` of the row's columns named like its fields, ``converted`` replacing some."""
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


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))
