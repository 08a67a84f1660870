"""The revision counter: each Agent row carries the number its latest revision took.

A deploy takes the next number with one ``UPDATE ... SET revision_counter = revision_counter
+ 1 ... RETURNING``, which is also what locks the Agent row, instead of a ``max()`` over its
revisions. Existing Agents are backfilled from their highest revision number (0 without one).
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0004"
down_revision = "0003"

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


def upgrade() -> None:
    steps.execute(COLUMN)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute("ALTER TABLE occ.agents DROP COLUMN revision_counter")
