"""Create, migrate, empty and drop throwaway PostgreSQL databases for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from occ.state import db, schema

APP_ROLE = "occ_app"
APP_PASSWORD = "occ-test-only"  # a throwaway test database role
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class DatabaseUrls:
    owner: str
    app: str
    name: str
    server: str


def psycopg_of(connection: sa.Connection | db.AutocommitConnection) -> psycopg.Connection[Any]:
    """The psycopg connection under a SQLAlchemy one (psycopg is occ's only driver)."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    return driver


def server_url() -> str:
    return db.normalize_url(os.environ.get("OCC_TEST_DATABASE_URL") or DEFAULT_SERVER)


def _admin_engine(url: str) -> sa.Engine:
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


def urls_for(name: str) -> DatabaseUrls:
    server = server_url()
    owner = make_url(server).set(database=name)
    app = owner.set(username=APP_ROLE, password=APP_PASSWORD)
    return DatabaseUrls(
        owner=owner.render_as_string(hide_password=False),
        app=app.render_as_string(hide_password=False),
        name=name,
        server=server,
    )


def create_test_database(name: str) -> DatabaseUrls:
    """A fresh database ``name`` on the test server, migrated, with occ_app able to log in."""
    urls = urls_for(name)
    engine = _admin_engine(urls.server)
    with engine.connect() as connection:
        _recreate(connection, name)
    engine.dispose()
    migrate(urls)
    return urls


def _recreate(connection: sa.Connection, name: str) -> None:
    connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    connection.execute(sa.text(f'CREATE DATABASE "{name}"'))


@contextlib.contextmanager
def unmigrated(name: str) -> Iterator[DatabaseUrls]:
    """A fresh, empty database ``name`` (no schema yet) that occ_app may log in to; dropped
    at the end."""
    urls = urls_for(name)
    engine = _admin_engine(urls.server)
    with engine.connect() as connection:
        _recreate(connection, name)
        exists = connection.execute(
            sa.text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": APP_ROLE}
        ).first()
        if exists is None:
            connection.execute(sa.text(f"CREATE ROLE {APP_ROLE}"))
        connection.execute(sa.text(f"ALTER ROLE {APP_ROLE} LOGIN PASSWORD '{APP_PASSWORD}'"))
    engine.dispose()
    try:
        yield urls
    finally:
        drop_database(urls)


def migrate(urls: DatabaseUrls) -> None:
    schema.upgrade(urls.owner)
    engine = _admin_engine(urls.owner)
    with engine.connect() as connection:
        connection.execute(sa.text(f"ALTER ROLE {APP_ROLE} LOGIN PASSWORD '{APP_PASSWORD}'"))
    engine.dispose()


_EVERY_TABLE: Final = sa.text("""
    SELECT string_agg(format('%I.%I', schemaname, tablename), ', ')
      FROM pg_tables
     WHERE schemaname = 'occ' AND tablename <> 'alembic_version'
""")


def empty(urls: DatabaseUrls) -> None:
    """Remove every row of every table of the schema (as the owner; TRUNCATE skips the row
    triggers), whatever tables the migrations made."""
    engine = _admin_engine(urls.owner)
    with engine.connect() as connection:
        tables = connection.execute(_EVERY_TABLE).scalar_one()
        connection.execute(sa.text(f"TRUNCATE {tables} CASCADE"))
    engine.dispose()


def drop_database(urls: DatabaseUrls) -> None:
    engine = _admin_engine(urls.server)
    with engine.connect() as connection:
        connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{urls.name}" WITH (FORCE)'))
    engine.dispose()
