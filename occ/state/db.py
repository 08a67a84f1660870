"""Database: the engine, the session factory and explicit transactions; nothing about tables.

Use cases open transactions with ``Database.transaction()``; everything below them takes the
session it is given and never commits. ``Database.autocommit_connection()`` hands the hot path
a pooled connection in autocommit with no session around it, for single statements.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm, pool

from occ.foundation import errors

Session = orm.Session
"""The session type use cases and repositories pass around (so callers need not import
SQLAlchemy for a type hint)."""


IDLE_PING_AFTER_S: Final = 1.0
"""A pooled connection idle this long is pinged before use: one that predates a database
restart (or a dropped link) is replaced then, not found dead by a request. Connections in
steady use skip the ping, so a busy process pays nothing for it."""


def _mark_idle(dbapi_connection: Any, record: pool.ConnectionPoolEntry) -> None:
    record.info["idle_since"] = time.monotonic()


def _pinger(idle_ping_after_s: float) -> Any:
    def ping_when_idle(
        dbapi_connection: Any, record: pool.ConnectionPoolEntry, proxy: pool.PoolProxiedConnection
    ) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is not None and time.monotonic() - idle_since >= idle_ping_after_s:
            _ping(dbapi_connection)

    return ping_when_idle


def _ping(dbapi_connection: Any) -> None:
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        dbapi_connection.rollback()
    except Exception as exc:
        # the pool discards this connection and checks out (or opens) another one
        raise sa_exc.DisconnectionError() from exc


def normalize_url(url: str) -> str:
    """A SQLAlchemy URL that uses psycopg 3 whatever scheme the operator wrote."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


class Database:
    """One engine and session factory per process."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 5,
        statement_timeout_ms: int | None = None,
        application_name: str = "occ",
        idle_ping_after_s: float | None = IDLE_PING_AFTER_S,
        connect_timeout_s: int = 10,
        tcp_user_timeout_ms: int | None = None,
    ) -> None:
        """``idle_ping_after_s`` (``None``: never) is how long a pooled connection may sit
        unused before it is pinged at checkout. ``connect_timeout_s`` bounds a new connection
        (libpq waits at least 2 s); ``tcp_user_timeout_ms`` bounds how long sent data may stay
        unacknowledged before the connection is dropped (``None``: the system's)."""
        options = f"-c application_name={application_name}"
        if statement_timeout_ms:
            options += f" -c statement_timeout={statement_timeout_ms}"
        connect_args: dict[str, Any] = {
            "options": options,
            "keepalives": 1,
            "keepalives_idle": 10,
            "connect_timeout": connect_timeout_s,
        }
        if tcp_user_timeout_ms is not None:
            connect_args["tcp_user_timeout"] = tcp_user_timeout_ms
        self.engine = sa.create_engine(
            normalize_url(url),
            pool_size=pool_size,
            max_overflow=pool_size,
            # no pre-ping of busy connections (a round trip per transaction); idle ones are
            # pinged at checkout instead (see IDLE_PING_AFTER_S)
            pool_pre_ping=False,
            pool_recycle=1800,
            connect_args=connect_args,
        )
        if idle_ping_after_s is not None:
            sa.event.listen(self.engine, "checkin", _mark_idle)
            sa.event.listen(self.engine, "checkout", _pinger(idle_ping_after_s))
        self._sessions = orm.sessionmaker(self.engine, expire_on_commit=False, autoflush=True)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[orm.Session]:
        """A session in one transaction: commit on success, roll back on error.

        A connection failure during COMMIT raises ``UnknownOutcome``: the change may have
        landed, so the caller must not blindly replay it.
        """
        with _reachable(), contextlib.closing(self._sessions()) as session:
            session.begin()
            try:
                yield session
                session.flush()
            except BaseException:
                session.rollback()
                raise
            try:
                session.commit()
            except sa_exc.OperationalError as exc:
                raise errors.UnknownOutcome() from exc

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[orm.Session]:
        """A read-only session with one consistent snapshot (REPEATABLE READ READ ONLY)."""
        with _reachable(), contextlib.closing(self._sessions()) as session, session.begin():
            session.execute(sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
            yield session

    @contextlib.contextmanager
    def autocommit_connection(self) -> Iterator[AutocommitConnection]:
        """A pooled connection in autocommit, with no session or SQLAlchemy connection around it.

        For the hot path's single statements (``occ.state.hot_statements``: the work queue's
        transitions, run two to four times per work item, and API-key authentication, run
        once per request): the checkout costs a pool checkout, where
        ``autocommit()`` also builds a connection, switches its isolation level and opens a
        session, which together cost more client CPU than the statement. The connection goes
        back to the pool in its transactional mode; a lost one is never handed out again.
        """
        with _reachable():
            try:
                pooled = self.engine.raw_connection()
            except self.engine.dialect.loaded_dbapi.Error as exc:  # the pool raises it as is
                raise errors.DependencyUnavailable("the database is unavailable") from exc
            connection = AutocommitConnection(pooled, self.engine.dialect)
            try:
                yield connection
            finally:
                connection.close()

    @contextlib.contextmanager
    def autocommit(self) -> Iterator[orm.Session]:
        """A session whose every statement is its own transaction (no BEGIN, no COMMIT).

        For a request's single-statement reads and idempotent single-row writes (API-key
        authentication), where an explicit transaction would only add round trips.
        """
        with _reachable():
            connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            with connection, orm.Session(connection, expire_on_commit=False) as session:
                yield session

    def ping(self) -> None:
        """One round trip to the database; ``DependencyUnavailable`` when it does not answer."""
        with self.snapshot() as session:
            session.execute(sa.text("SELECT 1"))

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


class AutocommitConnection:
    """A pooled DBAPI connection switched to autocommit for as long as it is checked out.

    It answers ``connection``, ``dialect`` and ``invalidate`` as a SQLAlchemy ``Connection``
    does, so code below the execution layer treats both alike.
    """

    def __init__(self, pooled: pool.PoolProxiedConnection, dialect: sa.Dialect) -> None:
        self.connection = pooled
        self.dialect = dialect
        try:
            pooled.driver_connection.autocommit = True  # type: ignore[union-attr]
        except Exception as exc:  # not idle, or closed: never hand it out again
            pooled.invalidate(exc)
            pooled.close()
            raise

    def invalidate(self, exception: BaseException | None = None) -> None:
        """The connection is lost: the pool discards it."""
        self.connection.invalidate(exception)

    def close(self) -> None:
        """Back to the pool, transactional again (an invalidated one is discarded)."""
        pooled = self.connection
        if pooled.is_valid:
            try:
                pooled.driver_connection.autocommit = False  # type: ignore[union-attr]
            except Exception as exc:  # closed under us: never hand it out again
                pooled.invalidate(exc)
        pooled.close()


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """A database connection failure inside becomes ``DependencyUnavailable``."""
    try:
        yield
    except sa_exc.OperationalError as exc:
        raise errors.DependencyUnavailable("the database is unavailable") from exc


LOCK_NOT_AVAILABLE: Final = "55P03"
"""The SQLSTATE of a lock not granted within the transaction's ``lock_timeout``."""
_LOCK_TIMEOUT: Final = sa.text("SELECT set_config('lock_timeout', :lock_timeout, true)")


def wait_for_locks_at_most(session: orm.Session, milliseconds: int) -> None:
    """For the rest of the session's transaction, give up on a lock not granted within
    ``milliseconds``: the statement fails with ``LOCK_NOT_AVAILABLE`` (``sqlstate``)."""
    session.execute(_LOCK_TIMEOUT, {"lock_timeout": f"{milliseconds}ms"})


def sqlstate(error: sa_exc.DBAPIError) -> str | None:
    """The SQLSTATE PostgreSQL reported with ``error``, if any."""
    state = getattr(error.orig, "sqlstate", None)
    return None if state is None else str(state)


def violated_constraint(error: sa_exc.IntegrityError) -> str | None:
    """The name of the constraint PostgreSQL reported, if any."""
    return getattr(getattr(error.orig, "diag", None), "constraint_name", None)
