"""Migration 0024 on real PostgreSQL: the built-in administrator Roles gain ``agent:read_logs``
(sorted in), other Roles stay as they were, and the downgrade takes it out again."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from occ import iam
from occ.controller import installation
from occ.state import roles as role_rows
from occ.state import schema
from occ.state.db import Database
from tests.support import databases

BEFORE = tuple(sorted(p for p in iam.PERMISSIONS if p not in {"agent:read_logs", "agent:use"}))


def permissions(database: Database) -> dict[str, list[str]]:
    with database.transaction() as session:
        found = session.execute(
            sa.text("SELECT name, permissions FROM occ.roles WHERE deleted_at IS NULL")
        )
        return {row.name: list(row.permissions) for row in found}


def test_the_administrator_roles_gain_read_logs_and_lose_it_on_downgrade() -> None:
    urls = databases.create_test_database(f"occ_read_logs_{uuid.uuid4().hex[:8]}")
    owner = Database(urls.owner, pool_size=1)
    try:
        schema.downgrade(urls.owner, "0023")
        with owner.transaction() as session:
            for name in (installation.ADMINISTRATOR_ROLE, "Installation administrator (recovered)"):
                role_rows.create_role(session, name=name, permissions=BEFORE)
            role_rows.create_role(session, name="auditors", permissions=["agent:read"])
        owner.dispose()
        schema.upgrade(urls.owner)

        upgraded = permissions(owner)
        for name in (installation.ADMINISTRATOR_ROLE, "Installation administrator (recovered)"):
            assert upgraded[name] == sorted([*BEFORE, "agent:read_logs"])
        assert upgraded["auditors"] == ["agent:read"]

        owner.dispose()
        schema.downgrade(urls.owner, "0023")
        downgraded = permissions(owner)
        assert downgraded[installation.ADMINISTRATOR_ROLE] == list(BEFORE)
        assert downgraded["auditors"] == ["agent:read"]
    finally:
        owner.dispose()
        databases.drop_database(urls)
