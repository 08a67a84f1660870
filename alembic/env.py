"""Alembic environment: the owner connection from occ settings, metadata from occ.state.models.

A caller may hand in a connection through ``config.attributes["connection"]``.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import context

from occ.settings.config import Settings
from occ.state import db, models

config = context.config


_AUDIT_PARTITION = re.compile(r"audit_events_(y[0-9]{4}m[0-9]{2}|default)")


def _include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    # the version table lives in the occ schema but is not part of the model; the month
    # partitions of audit_events (migration 0018) are the partitioned table's, made at run time
    if type_ == "table" and name is not None and _AUDIT_PARTITION.fullmatch(name):
        return False
    return not (type_ == "table" and name == "alembic_version")


def _run(connection: sa.Connection) -> None:
    connection.execute(sa.text("CREATE SCHEMA IF NOT EXISTS occ"))
    context.configure(
        connection=connection,
        target_metadata=models.Base.metadata,
        version_table_schema="occ",
        include_schemas=True,
        include_name=lambda name, type_, parent: type_ != "schema" or name == "occ",
        include_object=_include_object,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.attributes.get("url") or Settings.from_env().owner_database_url
    engine = sa.create_engine(db.normalize_url(url), poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("occ migrations run online only: use `occ db upgrade`")
run_migrations_online()
