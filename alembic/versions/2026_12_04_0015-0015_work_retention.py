"""Retention of work history: terminal work rows are pruned by age and outcome, in bounded
batches, keeping the rows something still reads.

* ``controller_work_finished (state, completed_at, id)``: the terminal rows of one outcome by
  the time they finished, which a prune walks oldest first, a batch at a time.
* ``controller_work_lane_finished (lane, kind, state, completed_at, id)``: the newest terminal
  row of a lane, kind and outcome, which a prune keeps (a deployment's latest result, an
  Agent's last failure, a failed deletion).
* ``occ.prune_work`` (``SECURITY DEFINER``: the application role may not delete work rows)
  deletes at most ``p_limit`` rows per call, skipping rows another transaction holds, and says
  where its walk stopped so the next call (a transaction of its own) resumes after it.

Both indexes are partial (terminal rows only): a queued or claimed row is never in them, so
the claim's transitions write them only when an item ends.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0015"
down_revision = "0014"

UPGRADE = r"""
CREATE INDEX controller_work_finished ON occ.controller_work (state, completed_at, id)
  WHERE completed_at IS NOT NULL;
CREATE INDEX controller_work_lane_finished
  ON occ.controller_work (lane, kind, state, completed_at, id)
  WHERE completed_at IS NOT NULL;

CREATE FUNCTION occ.prune_work(
  p_state text, p_older_than_ms bigint, p_after_finished timestamptz, p_after_id text,
  p_limit integer)
RETURNS TABLE (pruned integer, scanned integer, last_finished timestamptz, last_id text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH scanned AS MATERIALIZED (
    -- the next p_limit rows of the outcome that finished before the cutoff, oldest first,
    -- after the last row the previous call looked at: a kept row is read once per walk
    SELECT w.id, w.lane, w.kind, w.state, w.completed_at, w.agent_id, w.revision_id
      FROM occ.controller_work w
     WHERE w.state = p_state
       AND w.completed_at < clock_timestamp() - p_older_than_ms * interval '1 millisecond'
       AND (w.completed_at, w.id) > (coalesce(p_after_finished, '-infinity'),
                                     coalesce(p_after_id, ''))
     ORDER BY w.completed_at, w.id
     LIMIT p_limit
  ), doomed AS (
    SELECT s.id FROM scanned s
     -- kept: the newest row of its lane, kind and outcome (a deployment's latest result, an
     -- Agent's last failure or stop, a Namespace's or Agent's deletion)
     WHERE EXISTS (SELECT 1 FROM occ.controller_work n
                    WHERE n.lane = s.lane AND n.kind = s.kind AND n.state = s.state
                      AND n.completed_at IS NOT NULL
                      AND (n.completed_at, n.id) > (s.completed_at, s.id))
     -- kept: the deployment of an Agent's active revision (its repairs read it)
       AND NOT EXISTS (SELECT 1 FROM occ.agents a
                        WHERE s.kind = 'revision_reconcile' AND a.id = s.agent_id
                          AND a.active_revision_id = s.revision_id)
  ), locked AS (
    -- a row another transaction holds (a deletion being retried) is skipped, never waited for
    SELECT w.id FROM occ.controller_work w JOIN doomed d ON d.id = w.id
     WHERE w.state = p_state
       FOR UPDATE OF w SKIP LOCKED
  ), gone AS (
    DELETE FROM occ.controller_work w USING locked WHERE w.id = locked.id RETURNING w.id
  )
  SELECT CAST((SELECT count(*) FROM gone) AS integer),
         CAST((SELECT count(*) FROM scanned) AS integer),
         last.completed_at, last.id
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (SELECT completed_at, id FROM scanned
                        ORDER BY completed_at DESC, id DESC LIMIT 1) last ON true
$$;
REVOKE ALL ON FUNCTION occ.prune_work(text, bigint, timestamptz, text, integer) FROM PUBLIC;
"""

GRANTS = r"""
GRANT EXECUTE ON FUNCTION occ.prune_work(text, bigint, timestamptz, text, integer) TO occ_app;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(
        "DROP FUNCTION occ.prune_work(text, bigint, timestamptz, text, integer); "
        "DROP INDEX occ.controller_work_lane_finished; DROP INDEX occ.controller_work_finished"
    )
