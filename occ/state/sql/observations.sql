-- The fleet observer's statements (occ.state.observations runs them by name).
--
-- Each running Agent is observed once per interval at its phase (agents.observe_phase, 0 to
-- 999,999: the share of the interval after which it is due). A driver's cursor says up to
-- which moment its fleet was observed; a tick moves it over a window of time (under its row
-- lock, briefly: an observer that finds it held waits), then reads the Agents whose phases
-- fell due in that window (without the lock, so observers read their windows side by side).
-- An idle fleet writes only that one row, once per tick.

-- name: open_cursor
-- The driver's cursor, made the first time, an interval behind (so everything is due at once).
INSERT INTO occ.observer_cursors (compute_driver, observed_until)
VALUES (:compute_driver, clock_timestamp() - :interval_ms * interval '1 millisecond')
ON CONFLICT (compute_driver) DO NOTHING;

-- name: lock_cursor
-- The driver's cursor and the database clock. Another observer holds it only for its own
-- window's short transaction, so this waits (up to the lock timeout) rather than skips.
SELECT c.observed_until, clock_timestamp() AS now
  FROM occ.observer_cursors c
 WHERE c.compute_driver = :compute_driver
   FOR UPDATE;

-- name: running
-- How many running Agents the driver's fleet has (what one interval observes).
SELECT count(*) FROM occ.agents a
 WHERE a.compute_driver = :compute_driver AND a.status = 'active'
   AND a.desired_runtime_state = 'running' AND a.active_revision_id IS NOT NULL;

-- name: move_cursor
-- Record how far the fleet has been observed.
UPDATE occ.observer_cursors
   SET observed_until = :observed_until, updated_at = clock_timestamp()
 WHERE compute_driver = :compute_driver;

-- name: due
-- The running Agents whose phases lie in [:low, :high) (and [:low2, :high2), the part of a window
-- that wraps around): each with its active revision, the endpoint it published, its last
-- observation, and whether a newer deploy is under way.
SELECT a.observe_phase, a.endpoint,
       r.*,
       o.revision_id AS observed_revision_id, o.status AS observed_status,
       o.repairs AS observed_repairs, o.repair_after AS observed_repair_after,
       EXISTS (SELECT 1 FROM occ.controller_work w
                WHERE w.agent_id = a.id AND w.kind = :deployment_kind
                  AND w.state IN ('queued', 'claimed') AND w.revision_id <> r.id)
         AS deploying
  FROM occ.agents a
  JOIN occ.agent_revisions r ON r.agent_id = a.id AND r.id = a.active_revision_id
  LEFT JOIN occ.agent_runtime o ON o.agent_id = a.id
 WHERE a.compute_driver = :compute_driver AND r.compute_driver = :compute_driver
   AND a.status = 'active' AND a.desired_runtime_state = 'running'
   AND a.active_revision_id IS NOT NULL
   AND ((a.observe_phase >= :low AND a.observe_phase < :high)
        OR (a.observe_phase >= :low2 AND a.observe_phase < :high2))
 ORDER BY a.observe_phase, a.id;

-- name: lag
-- How far behind the database clock the driver's fleet was observed (NULL: never).
SELECT extract(epoch FROM clock_timestamp() - c.observed_until) AS lag_s
  FROM occ.observer_cursors c
 WHERE c.compute_driver = :compute_driver;
