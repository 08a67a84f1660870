"""Priority classes: every work item carries its kind's class, and the claim reads each class
through its own range of the ready index.

``occ.work_priority(kind)`` is the class of a kind as ``occ.state.work_keys.SPECS`` declares it
(4 user intent, 2 repair, 1 periodic upkeep: the value is the class's weight in a batch), and
``priority`` is a stored column generated from it, so every insert (the queue's, the deploy
statement's, a test's) gets the right class without naming it. A migration that adds a kind
replaces the function with the new kind's line (rows of existing kinds keep their value).
The ready index leads with the class: the claim reads a bounded window of each class, oldest
first, whatever the depth of the others.

Adding the stored column rewrites the table once (on a table of a few million rows, seconds).
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0014"
down_revision = "0013"

UPGRADE = r"""
CREATE FUNCTION occ.work_priority(p_kind text) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CAST(CASE p_kind
    WHEN 'namespace_ready' THEN 4
    WHEN 'namespace_deleted' THEN 4
    WHEN 'agent_stopped' THEN 4
    WHEN 'agent_deleted' THEN 4
    WHEN 'revision_reconcile' THEN 4
    WHEN 'revision_maintenance' THEN 2
  END AS smallint)
$$;

ALTER TABLE occ.controller_work
  ADD COLUMN priority smallint NOT NULL GENERATED ALWAYS AS (occ.work_priority(kind)) STORED;

DROP INDEX occ.controller_work_ready;
CREATE INDEX controller_work_ready
  ON occ.controller_work (priority, available_at, created_at, id)
  INCLUDE (lane, attempt_count) WHERE state = 'queued';
"""

DOWNGRADE = r"""
DROP INDEX occ.controller_work_ready;
ALTER TABLE occ.controller_work DROP COLUMN priority;
DROP FUNCTION occ.work_priority(text);
CREATE INDEX controller_work_ready ON occ.controller_work (available_at, created_at, id)
  INCLUDE (lane, attempt_count) WHERE state = 'queued';
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role("GRANT EXECUTE ON FUNCTION occ.work_priority(text) TO occ_app")


def downgrade() -> None:
    steps.execute(DOWNGRADE)
