"""Rows into values: a record from a row's columns, the first row or every row a query selects,
a table's recurring statements read into its values (``Values``), the equalities of the filters
a list was given; whether an UPDATE changed a row, the UPDATE that stamps the moment rows were
disabled, revoked or soft-deleted, and the UPDATE of rows that records when they changed.

The repositories' values are frozen dataclasses whose fields are named like the columns they
come from (or the keys of a JSON object a statement builds); a repository converts only what
needs it (an enum, a tuple, a copy of a JSON object) and passes it to ``record``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state import keyset

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")
T = TypeVar("T")


def record(cls: type[D], row: Mapping[Any, Any], **converted: Any) -> D:
    """A ``cls`` of the row's columns (or an object's keys) named like its fields,
    ``converted`` replacing some."""
    columns = {name: row[name] for name in _fields(cls) if name not in converted}
    return cls(**columns, **converted)


def unprefixed(row: Mapping[Any, Any], prefix: str) -> dict[str, Any]:
    """The columns a statement read under ``prefix`` (one table's, beside another's), by their
    own names."""
    return {
        name.removeprefix(prefix): value for name, value in row.items() if name.startswith(prefix)
    }


def first(
    session: orm.Session,
    query: sa.Select[Any],
    make: Callable[[sa.RowMapping], T],
    *,
    lock: bool = False,
) -> T | None:
    """The first row ``query`` selects made into a value, or ``None``; ``lock`` takes its row
    lock (``FOR UPDATE``)."""
    return first_returned(session, query.with_for_update() if lock else query, make)


def first_returned(
    session: orm.Session, statement: sa.Executable, make: Callable[[sa.RowMapping], T]
) -> T | None:
    """The first row ``statement`` returns made into a value, or ``None``."""
    row = session.execute(statement).mappings().first()
    return None if row is None else make(row)


def every(
    session: orm.Session, query: sa.Executable, make: Callable[[sa.RowMapping], T]
) -> list[T]:
    """Every row ``query`` selects (or a statement returns), in its order, made into values."""
    return [make(row) for row in session.execute(query).mappings()]


def changed(session: orm.Session, statement: sa.Update) -> bool:
    """Run the UPDATE: whether it changed a row (a compare-and-set that found its row as
    expected)."""
    return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]


def stamped(table: sa.Table, column: str, *where: sa.ColumnElement[bool]) -> sa.Update:
    """The UPDATE that sets ``column`` to the current time on the rows ``where`` selects whose
    ``column`` is unset: an idempotent disable, revoke or soft delete that keeps the first
    moment."""
    return (
        sa.update(table)
        .where(*where, table.c[column].is_(None))
        .values({column: sa.func.clock_timestamp()})
    )


def touched(table: sa.Table, *where: sa.ColumnElement[bool], **values: Any) -> sa.Update:
    """The UPDATE that sets ``values`` on the rows ``where`` selects and moves their
    ``updated_at`` to the current time."""
    return sa.update(table).where(*where).values(**values, updated_at=sa.func.clock_timestamp())


def given(table: sa.Table, **filters: object) -> list[sa.ColumnElement[bool]]:
    """``column == value`` for each filter that was given (not ``None``), named like its
    column: the conditions of a list's optional filters."""
    return [table.c[name] == value for name, value in filters.items() if value is not None]


@dataclasses.dataclass(frozen=True)
class Values(Generic[D]):
    """A table whose rows a repository hands out as ``value``s, and the statements it repeats:
    insert one row, read one row by its id or a condition, stamp one row, read a window of a
    list (of one Namespace's rows, for a table whose rows are in a Namespace).

    The statements read and return the columns named like the value's fields (a column no
    field names, such as a hash or a ciphertext, stays in the table); ``convert`` names the
    fields made from their column by a function (an enum, a tuple, a copy of a JSON object),
    the others are the columns as they are.
    """

    table: sa.Table
    value: type[D]
    convert: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)

    def make(self, row: Mapping[Any, Any]) -> D:
        """The value of one row."""
        converted = {name: convert(row[name]) for name, convert in self.convert.items()}
        return record(self.value, row, **converted)

    @functools.cached_property
    def columns(self) -> tuple[sa.ColumnElement[Any], ...]:
        """The columns read and returned, in the table's order."""
        fields = set(_fields(self.value))
        return tuple(column for column in self.table.c if column.name in fields)

    def select(self, *where: sa.ColumnElement[bool]) -> sa.Select[Any]:
        """The SELECT of the columns read, of the rows ``where`` selects."""
        return sa.select(*self.columns).where(*where)

    def insert(self, **values: Any) -> pg.Insert:
        """The INSERT of one row of ``values`` (``returned`` runs it)."""
        return pg.insert(self.table).values(**values)

    def inserted(self, session: orm.Session, **values: Any) -> D:
        """The row of ``values``, inserted."""
        statement = self.insert(**values).returning(*self.columns)
        return self.make(session.execute(statement).mappings().one())

    def returned(self, session: orm.Session, statement: sa.Insert | sa.Update) -> D | None:
        """Run the INSERT or UPDATE returning the columns read: the first row it wrote, or
        ``None`` (it matched nothing, or met a conflict it does nothing on)."""
        return first_returned(session, statement.returning(*self.columns), self.make)

    def get(
        self,
        session: orm.Session,
        row_id: str,
        *where: sa.ColumnElement[bool],
        lock: bool = False,
    ) -> D | None:
        """The row with this id (where ``where`` holds too), or ``None``; ``lock`` takes its
        row lock."""
        return self.find(session, self.table.c.id == row_id, *where, lock=lock)

    def stamp(self, session: orm.Session, row_id: str, column: str) -> D | None:
        """Set the row's ``column`` to the current time unless it is set (see ``stamped``): the
        row then, or ``None`` if it is missing."""
        session.execute(stamped(self.table, column, self.table.c.id == row_id))
        return self.get(session, row_id)

    def find(
        self, session: orm.Session, *where: sa.ColumnElement[bool], lock: bool = False
    ) -> D | None:
        """The first row ``where`` selects, or ``None``; ``lock`` takes its row lock."""
        return first(session, self.select(*where), self.make, lock=lock)

    def get_in(
        self, session: orm.Session, namespace_id: str, row_id: str, *, lock: bool = False
    ) -> D | None:
        """The Namespace's row with this id, or ``None``; ``lock`` takes its row lock."""
        return self.get(session, row_id, self.table.c.namespace_id == namespace_id, lock=lock)

    def list_in(
        self, session: orm.Session, namespace_id: str, window: keyset.Window = keyset.EVERYTHING
    ) -> list[D]:
        """The Namespace's rows in creation order (those in ``window``)."""
        return self.window(session, window, self.table.c.namespace_id == namespace_id)

    def window(
        self,
        session: orm.Session,
        window: keyset.Window,
        *where: sa.ColumnElement[bool],
        order: keyset.Order = keyset.BY_CREATION,
    ) -> list[D]:
        """The rows ``where`` selects in ``order``, those in ``window``."""
        return every(session, order.window(self.select(*where), self.table, window), self.make)


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))
