"""The engine's pool after the database dropped its connections (a restart, a failover)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from occ.foundation import errors
from occ.state.db import Database
from tests.support import databases


def _terminate(owner_db: Database, application_name: str) -> int:
    """What a server restart does to pooled connections: their backends are gone."""
    with owner_db.transaction() as session:
        return len(
            session.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :name"
                ),
                {"name": application_name},
            ).all()
        )


@pytest.fixture
def name() -> str:
    return f"occ-pool-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def pinging(database_urls: databases.DatabaseUrls, name: str) -> Iterator[Database]:
    database = Database(database_urls.app, pool_size=2, application_name=name, idle_ping_after_s=0)
    yield database
    database.dispose()


@pytest.fixture
def trusting(database_urls: databases.DatabaseUrls, name: str) -> Iterator[Database]:
    database = Database(
        database_urls.app, pool_size=2, application_name=name, idle_ping_after_s=None
    )
    yield database
    database.dispose()


def _select_one(database: Database) -> int:
    with database.transaction() as session:
        return int(session.execute(sa.text("SELECT 1")).scalar_one())


def test_a_pooled_connection_the_server_dropped_is_replaced_before_use(
    pinging: Database, owner_db: Database, name: str
) -> None:
    assert _select_one(pinging) == 1  # the pool now holds an idle connection
    assert _terminate(owner_db, name) == 1

    assert _select_one(pinging) == 1  # the first request after the "restart" succeeds


def test_without_the_idle_ping_the_first_request_fails(
    trusting: Database, owner_db: Database, name: str
) -> None:
    """The control: what the ping saves a request from (so the test above means something)."""
    assert _select_one(trusting) == 1
    assert _terminate(owner_db, name) == 1

    with pytest.raises(errors.DependencyUnavailable):
        _select_one(trusting)
    assert _select_one(trusting) == 1


def test_an_autocommit_connection_goes_back_to_the_pool_transactional(
    trusting: Database,
) -> None:
    with trusting.autocommit_connection() as connection:
        driver = databases.psycopg_of(connection)
        pid = driver.info.backend_pid
        driver.execute("SELECT 1")
        assert driver.autocommit
        assert driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with trusting.transaction() as session:
        # the same pooled connection (the pool hands the last one back), in a transaction again
        assert session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() == pid
        status = databases.psycopg_of(session.connection()).info.transaction_status
        assert status == psycopg.pq.TransactionStatus.INTRANS


def test_an_autocommit_connection_the_server_dropped_is_replaced_before_use(
    pinging: Database, owner_db: Database, name: str
) -> None:
    with pinging.autocommit_connection() as connection:
        databases.psycopg_of(connection).execute("SELECT 1")
    assert _terminate(owner_db, name) == 1

    with pinging.autocommit_connection() as connection:
        row = databases.psycopg_of(connection).execute("SELECT 1").fetchone()
    assert row == (1,)


def test_an_autocommit_connection_to_an_unreachable_database_is_unavailable() -> None:
    unreachable = Database("postgresql+psycopg://occ:occ@127.0.0.1:1/occ", pool_size=1)
    try:
        with pytest.raises(errors.DependencyUnavailable), unreachable.autocommit_connection():
            pass
    finally:
        unreachable.dispose()
