"""The revision counter: each Agent row carries the number its latest revision took.

A deploy takes the next number with one ``UPDATE ... SET revision_counter = revision_counter
+ 1 ... RETURNING``, which is also what locks the Agent row, instead of a ``max()`` over its
revisions. Existing Agents are backfilled from their highest revision number (0 without one).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMN = r"""
ALTER TABLE occ.agents ADD COLUMN revision_counter bigint NOT NULL DEFAULT 0;
UPDATE occ.agents a SET revision_counter = r.highest
  FROM (SELECT agent_id, max(revision_number) AS highest
          FROM occ.agent_revisions GROUP BY agent_id) r
 WHERE r.agent_id = a.id;
ALTER TABLE occ.agents ADD CONSTRAINT agents_revision_counter_not_negative
  CHECK (revision_counter >= 0);
"""

GRANTS = r"""
GRANT UPDATE (revision_counter) ON occ.agents TO occ_app;
"""


def _sql(statement: str) -> None:
    driver_connection = op.get_bind().connection.driver_connection
    assert driver_connection is not None
    with driver_connection.cursor() as cursor:
        cursor.execute(statement)


def upgrade() -> None:
    _sql(COLUMN)
    _sql(
        "DO $grants$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'occ_app') THEN "
        f"EXECUTE $sql${GRANTS}$sql$; END IF; END $grants$"
    )


def downgrade() -> None:
    _sql("ALTER TABLE occ.agents DROP COLUMN revision_counter")
