"""Test fixtures: one migrated PostgreSQL database per run, emptied before each test.

Tests connect as ``occ_app`` (the role the API and workers use); the owner connection only
creates, migrates and empties the database. ``OCC_TEST_DATABASE_URL`` names the server (the
Makefile finds or starts one). ``permissive_umask`` clears the umask for tests of file modes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

for _name in [
    name for name in os.environ if name.startswith("OCC_") and not name.startswith("OCC_TEST_")
]:
    del os.environ[_name]

from occ.state import values  # noqa: E402
from occ.state.db import Database  # noqa: E402
from tests.support import databases  # noqa: E402


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """No umask for the test, so that every file mode checked is the one the code set."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture(scope="session")
def database_urls() -> Iterator[databases.DatabaseUrls]:
    urls = databases.create_test_database(f"occ_test_{os.getpid()}")
    try:
        yield urls
    finally:
        databases.drop_database(urls)


def _disposed(url: str, pool_size: int) -> Iterator[Database]:
    database = Database(url, pool_size=pool_size)
    try:
        yield database
    finally:
        database.dispose()


@pytest.fixture
def db(database_urls: databases.DatabaseUrls) -> Iterator[Database]:
    """The application's view of an empty database (role occ_app)."""
    databases.empty(database_urls)
    yield from _disposed(database_urls.app, pool_size=20)


@pytest.fixture
def owner_db(database_urls: databases.DatabaseUrls) -> Iterator[Database]:
    """The owner's connection, for inspecting what the application may not touch."""
    yield from _disposed(database_urls.owner, pool_size=2)


@pytest.fixture
def policy() -> values.QueuePolicy:
    return values.QueuePolicy(
        lease_ms=15_000, dispatch_lease_ms=30_000, max_attempts=5, convergence_timeout_ms=900_000
    )
