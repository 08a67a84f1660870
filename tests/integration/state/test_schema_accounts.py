"""Migration 0021 on real PostgreSQL: ``account:read`` reaches the administrator Role bootstrap
made before it, bindings may name an account, and the downgrade takes all of it back."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from occ import iam
from occ.controller import installation
from occ.state import roles as role_rows
from occ.state import schema
from occ.state.db import Database
from tests.support import databases


def administrator_permissions(database: Database) -> list[str]:
    with database.transaction() as session:
        found = session.execute(
            sa.text("SELECT permissions FROM occ.roles WHERE name = :name"),
            {"name": installation.ADMINISTRATOR_ROLE},
        ).scalar_one()
    return list(found)


def test_the_administrator_role_gains_account_read_and_loses_it_on_downgrade() -> None:
    urls = databases.create_test_database(f"occ_accounts_{uuid.uuid4().hex[:8]}")
    owner = Database(urls.owner, pool_size=1)
    try:
        owner.dispose()
        schema.downgrade(urls.owner, "0020")
        with owner.transaction() as session:
            table = session.execute(sa.text("SELECT to_regclass('occ.accounts')")).scalar()
        assert table is None
        before = [  # 0024 grants agent:read_logs afterwards
            each
            for each in iam.ADMINISTRATOR_PERMISSIONS
            if each not in {"account:read", "agent:read_logs"}
        ]
        with owner.transaction() as session:  # what bootstrap made before 0021
            role_rows.create_role(session, name=installation.ADMINISTRATOR_ROLE, permissions=before)
            role_rows.create_role(session, name="readers", permissions=["namespace:read"])
        owner.dispose()

        schema.upgrade(urls.owner)
        after = administrator_permissions(owner)
        assert sorted(after) == sorted([*before, "account:read", "agent:read_logs"])
        with owner.transaction() as session:  # only that Role
            readers = session.execute(
                sa.text("SELECT permissions FROM occ.roles WHERE name = 'readers'")
            ).scalar_one()
        assert list(readers) == ["namespace:read"]
        with owner.transaction() as session:
            valid = session.execute(
                sa.text("SELECT occ.permissions_are_valid(ARRAY['account:read'])")
            ).scalar_one()
        assert valid is True
        owner.dispose()

        schema.upgrade(urls.owner)  # a repeat changes nothing
        assert administrator_permissions(owner) == after
        owner.dispose()

        schema.downgrade(urls.owner, "0020")
        assert sorted(administrator_permissions(owner)) == sorted(before)
        owner.dispose()
        schema.upgrade(urls.owner)
    finally:
        owner.dispose()
        databases.drop_database(urls)
