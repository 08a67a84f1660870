"""Fleet observation as a schedule: a phase per Agent, one cursor per Compute Driver, and the
repair state of a degraded runtime.

An active revision is observed once per interval at its Agent's phase (``observe_phase``, a
stable hash of the id spread over the interval): the observer reads the Agents whose phases
fell due since its cursor, in bulk, and writes nothing when nothing changed. The cursor
(``observer_cursors``: how far in time each driver's fleet was observed) is the only row an
idle fleet writes, once per observer tick. A runtime found different gets one repair at a
time, spaced by ``repairs`` / ``repair_after`` on its ``agent_runtime`` row.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0013"
down_revision = "0012"

UPGRADE = r"""
ALTER TABLE occ.agents
  ADD COLUMN observe_phase integer NOT NULL
    GENERATED ALWAYS AS (mod(abs(hashtext(id)::bigint), 1000000)::integer) STORED;
CREATE INDEX agents_observed ON occ.agents (compute_driver, observe_phase)
  INCLUDE (active_revision_id)
  WHERE status = 'active' AND desired_runtime_state = 'running'
    AND active_revision_id IS NOT NULL;

CREATE TABLE occ.observer_cursors (
  compute_driver text NOT NULL,
  observed_until timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT observer_cursors_pkey PRIMARY KEY (compute_driver)
);

ALTER TABLE occ.agent_runtime
  ADD COLUMN repairs integer NOT NULL DEFAULT 0,
  ADD COLUMN repair_after timestamptz,
  ADD CONSTRAINT agent_runtime_repairs_valid CHECK (repairs >= 0);
"""

GRANTS = r"""
GRANT SELECT, INSERT ON occ.observer_cursors TO occ_app;
GRANT UPDATE (observed_until, updated_at) ON occ.observer_cursors TO occ_app;
GRANT UPDATE (repairs, repair_after) ON occ.agent_runtime TO occ_app;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(
        "ALTER TABLE occ.agent_runtime DROP CONSTRAINT agent_runtime_repairs_valid, "
        "DROP COLUMN repair_after, DROP COLUMN repairs; "
        "DROP TABLE occ.observer_cursors; "
        "DROP INDEX occ.agents_observed; "
        "ALTER TABLE occ.agents DROP COLUMN observe_phase"
    )
