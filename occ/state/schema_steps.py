"""The two steps every migration repeats: raw SQL on the driver connection, and grants to
``occ_app`` when that role exists (single-role installations have none).

Migrations run with the owner connection (``occ.state.schema``); nothing at run time uses this.
"""

from __future__ import annotations

from alembic import op


def execute(statement: str) -> None:
    """Run ``statement`` as written: its colons and percent signs are not parameters."""
    driver_connection = op.get_bind().connection.driver_connection
    assert driver_connection is not None
    with driver_connection.cursor() as cursor:
        cursor.execute(statement)


def grant_to_app_role(grants: str) -> None:
    """Run ``grants`` (GRANT or REVOKE statements) only where the ``occ_app`` role exists."""
    execute(
        "DO $grants$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'occ_app') THEN "
        f"EXECUTE $sql${grants}$sql$; END IF; END $grants$"
    )
