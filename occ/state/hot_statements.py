"""Hot-path statements: named SQL run straight on the psycopg connection a session holds.

The work queue's one-row fenced transitions (start, renew, complete, ...) run two to four
times for every work item, and for them SQLAlchemy's execution layer (the execution context,
result metadata rebuilt from every cursor description, the rows) costs more client CPU than
the statement itself. These statements are the same named SQL (``occ.state.queries``),
compiled once to the driver's parameter style and executed on the session's own DBAPI
connection, so they run in its transaction, or in its autocommit, exactly as before.

A driver error is raised as the SQLAlchemy exception SQLAlchemy's own execution raises for it
(``IntegrityError``, ``OperationalError``, ...; a lost connection is invalidated first, so the
pool never hands it out again), so callers and ``occ.db`` handle either path alike. The
statement's parameters are kept out of the error's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import psycopg
import sqlalchemy as sa
from psycopg.rows import dict_row
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm
from sqlalchemy.dialects.postgresql import psycopg as psycopg_dialect

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


def first(
    session: orm.Session, statement: HotStatement, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The statement's first row as a dict of its columns, or ``None`` when it has none."""
    connection = session.connection()
    driver_connection = cast(psycopg.Connection[Any], connection.connection.driver_connection)
    try:
        with driver_connection.cursor(row_factory=dict_row) as cursor:
            cursor.execute(statement.sql, params)
            row: dict[str, Any] | None = cursor.fetchone()
            return row
    except psycopg.Error as exc:
        raise _translated(connection, statement, exc) from exc


def _translated(
    connection: sa.Connection, statement: HotStatement, exc: psycopg.Error
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
