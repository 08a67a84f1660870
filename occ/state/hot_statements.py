"""Hot-path statements: named SQL run straight on a psycopg connection.

The work queue's one-row fenced transitions (start, renew, complete, ...) run two to four
times for every work item, and for them SQLAlchemy's execution layer (the execution context,
result metadata rebuilt from every cursor description, the rows) costs more client CPU than
the statement itself. These statements are the same named SQL (``occ.state.queries``),
compiled once to the driver's parameter style and executed on a ``Target``'s DBAPI
connection: a session's own (in its transaction, or its autocommit), or an
``AutocommitConnection`` (``Database.autocommit_connection()``: one statement, one commit, and
no session to build around it).

A driver error is raised as the SQLAlchemy exception SQLAlchemy's own execution raises for it
(``IntegrityError``, ``OperationalError``, ...; a lost connection is invalidated first, so the
pool never hands it out again), so callers and ``occ.state.db`` handle either path alike. The
statement's parameters are kept out of the error's text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

import psycopg
import sqlalchemy as sa
from psycopg.rows import RowFactory, dict_row, tuple_row
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm, pool
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect

from occ.state.db import AutocommitConnection

Target = orm.Session | AutocommitConnection
"""Where a hot statement runs: a session (its transaction) or a connection in autocommit."""

_DIALECT: Final = psycopg_dialect.dialect()  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class HotStatement:
    """A named statement in the driver's parameter style (``%(name)s``)."""

    name: str
    sql: str


def compile_all(statements: Mapping[str, sa.TextClause], *names: str) -> dict[str, HotStatement]:
    """``names`` of ``statements`` compiled for the driver (SQLAlchemy's compiler turns
    ``:name`` into ``%(name)s`` and escapes literal ``%``)."""
    return {
        name: HotStatement(name, statements[name].compile(dialect=_DIALECT).string)
        for name in names
    }


class _Connected(Protocol):
    """What running a statement needs of a SQLAlchemy ``Connection`` or an
    ``AutocommitConnection``: the pooled DBAPI connection, the dialect, and invalidation."""

    @property
    def connection(self) -> pool.PoolProxiedConnection: ...

    @property
    def dialect(self) -> sa.Dialect: ...

    def invalidate(self, exception: BaseException | None = None) -> None: ...


def first(
    target: Target, statement: HotStatement, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The statement's first row as a dict of its columns, or ``None`` when it has none."""
    with _executed(target, statement, params, dict_row) as cursor:
        row: dict[str, Any] | None = cursor.fetchone()
        return row


def every(
    target: Target, statement: HotStatement, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every row of the statement, in its order, as dicts of their columns."""
    with _executed(target, statement, params, dict_row) as cursor:
        found: list[dict[str, Any]] = cursor.fetchall()
        return found


def run(target: Target, statement: HotStatement, params: Mapping[str, Any]) -> int:
    """Run a statement that returns no rows; how many rows it changed."""
    with _executed(target, statement, params, tuple_row) as cursor:
        return cursor.rowcount


@contextlib.contextmanager
def _executed(
    target: Target,
    statement: HotStatement,
    params: Mapping[str, Any],
    row_factory: RowFactory[Any],
) -> Iterator[psycopg.Cursor[Any]]:
    """A cursor that ran the statement on the target's driver connection; a driver error
    inside is raised as SQLAlchemy's."""
    connection: _Connected = (
        target if isinstance(target, AutocommitConnection) else target.connection()
    )
    driver_connection = cast(psycopg.Connection[Any], connection.connection.driver_connection)
    try:
        with driver_connection.cursor(row_factory=row_factory) as cursor:
            cursor.execute(statement.sql, params)
            yield cursor
    except psycopg.Error as exc:
        raise _translated(connection, statement, exc) from exc


def _translated(
    connection: _Connected, statement: HotStatement, exc: psycopg.Error
) -> BaseException:
    dbapi_connection = connection.connection.dbapi_connection
    lost = connection.dialect.is_disconnect(cast(Any, exc), dbapi_connection, None)
    if lost:
        connection.invalidate(exc)
    return sa_exc.DBAPIError.instance(
        statement.sql,
        None,
        exc,
        psycopg.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=connection.dialect,
    )
