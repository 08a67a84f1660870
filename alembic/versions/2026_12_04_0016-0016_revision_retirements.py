"""Retirements: which revisions of an Agent were retired (their runtime removed), so a deploy
retires only the earlier revisions that may still have one, not the Agent's whole history.

A row is written in the publication of the deploy pass that retired the revision; it goes
with the revision (cascade) when the Agent is deleted. Revisions themselves stay immutable.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0016"
down_revision = "0015"

UPGRADE = r"""
CREATE TABLE occ.revision_retirements (
  agent_id text NOT NULL,
  revision_id text NOT NULL,
  retired_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT revision_retirements_pkey PRIMARY KEY (agent_id, revision_id),
  CONSTRAINT revision_retirements_revision_fkey FOREIGN KEY (agent_id, revision_id)
    REFERENCES occ.agent_revisions (agent_id, id) ON DELETE CASCADE
);
"""

GRANTS = r"""
GRANT SELECT, INSERT ON occ.revision_retirements TO occ_app;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute("DROP TABLE occ.revision_retirements")
