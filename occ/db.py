"""Database: the engine, the session factory and explicit transactions; nothing about tables.

Use cases open transactions with ``Database.transaction()``; everything below them takes the
session it is given and never commits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ import errors


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
    ) -> None:
        options = f"-c application_name={application_name}"
        if statement_timeout_ms:
            options += f" -c statement_timeout={statement_timeout_ms}"
        self.engine = sa.create_engine(
            normalize_url(url),
            pool_size=pool_size,
            max_overflow=pool_size,
            # no pre-ping (a round trip per transaction): a connection found dead is
            # invalidated by SQLAlchemy and the caller sees DependencyUnavailable once
            pool_pre_ping=False,
            pool_recycle=1800,
            connect_args={
                "options": options,
                "keepalives": 1,
                "keepalives_idle": 10,
                "connect_timeout": 10,
            },
        )
        self._sessions = orm.sessionmaker(self.engine, expire_on_commit=False, autoflush=True)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[orm.Session]:
        """A session in one transaction: commit on success, roll back on error.

        A connection failure during COMMIT raises ``UnknownOutcome``: the change may have
        landed, so the caller must not blindly replay it.
        """
        session = self._sessions()
        try:
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
        except sa_exc.OperationalError as exc:
            raise errors.DependencyUnavailable("the database is unavailable") from exc
        finally:
            session.close()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[orm.Session]:
        """A read-only session with one consistent snapshot (REPEATABLE READ READ ONLY)."""
        session = self._sessions()
        try:
            with session.begin():
                session.execute(
                    sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                )
                yield session
        except sa_exc.OperationalError as exc:
            raise errors.DependencyUnavailable("the database is unavailable") from exc
        finally:
            session.close()

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def violated_constraint(error: sa_exc.IntegrityError) -> str | None:
    """The name of the constraint PostgreSQL reported, if any."""
    return getattr(getattr(error.orig, "diag", None), "constraint_name", None)
