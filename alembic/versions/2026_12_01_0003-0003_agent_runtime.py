"""Observed runtime status: one row per Agent with what the last observation of its active
revision found (``ready`` or ``degraded``), when, and why.

Written by the workers' deploy and maintenance passes; removed with the Agent (cascade).
An Agent without a row, or whose row names another revision than the active one, is
``unknown``.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0003"
down_revision = "0002"

TABLE = r"""
CREATE TABLE occ.agent_runtime (
  agent_id text NOT NULL,
  revision_id text NOT NULL,
  status text NOT NULL,
  reason_code text NOT NULL,
  observed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT agent_runtime_pkey PRIMARY KEY (agent_id),
  CONSTRAINT agent_runtime_agent_fkey FOREIGN KEY (agent_id)
    REFERENCES occ.agents (id) ON DELETE CASCADE,
  CONSTRAINT agent_runtime_revision_fkey FOREIGN KEY (agent_id, revision_id)
    REFERENCES occ.agent_revisions (agent_id, id) ON DELETE CASCADE,
  CONSTRAINT agent_runtime_status_valid CHECK (status IN ('ready', 'degraded')),
  CONSTRAINT agent_runtime_reason_code_format CHECK (reason_code ~ '^[A-Z][A-Z0-9_]{0,63}$')
);
"""

GRANTS = r"""
GRANT SELECT, INSERT ON occ.agent_runtime TO occ_app;
GRANT UPDATE (revision_id, status, reason_code, observed_at) ON occ.agent_runtime TO occ_app;
"""


def upgrade() -> None:
    steps.execute(TABLE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute("DROP TABLE occ.agent_runtime")
