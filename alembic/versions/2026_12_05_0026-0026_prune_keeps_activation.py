"""Retention keeps an Agent's newest activation.

A deployment that fails after it moved the active pointer rolls the pointer back to the newest
earlier revision whose deployment activated it (``deploys.last_succeeded`` reads those rows).
``occ.prune_work`` of 0015 kept only the newest succeeded deployment row of a lane, whatever it
ended with, and the active revision's: once a newer deploy was superseded or a stop completed,
an old activation that was still the rollback target could go, and the failed deploy then left
the Agent with no active revision. The function now also keeps the newest succeeded deployment
row of each lane that activated its revision. The downgrade puts 0015's function back.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0026"
down_revision = "0025"

_FUNCTION = r"""
CREATE OR REPLACE FUNCTION occ.prune_work(
  p_state text, p_older_than_ms bigint, p_after_finished timestamptz, p_after_id text,
  p_limit integer)
RETURNS TABLE (pruned integer, scanned integer, last_finished timestamptz, last_id text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH scanned AS MATERIALIZED (
    -- the next p_limit rows of the outcome that finished before the cutoff, oldest first,
    -- after the last row the previous call looked at: a kept row is read once per walk
    SELECT w.id, w.lane, w.kind, w.state, w.completed_at, w.agent_id, w.revision_id{columns}
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
                          AND a.active_revision_id = s.revision_id){keep}
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
"""

_KEEP_ACTIVATION = r"""
     -- kept: the lane's newest deployment that activated its revision (a deploy that fails
     -- after moving the pointer rolls it back there)
       AND NOT (s.kind = 'revision_reconcile' AND s.state = 'succeeded'
                AND s.reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE')
                AND NOT EXISTS (
                  SELECT 1 FROM occ.controller_work n
                   WHERE n.lane = s.lane AND n.kind = s.kind AND n.state = s.state
                     AND n.reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE')
                     AND n.completed_at IS NOT NULL
                     AND (n.completed_at, n.id) > (s.completed_at, s.id)))"""


def upgrade() -> None:
    steps.execute(_FUNCTION.format(columns=", w.reason_code", keep=_KEEP_ACTIVATION))


def downgrade() -> None:
    steps.execute(_FUNCTION.format(columns="", keep=""))
