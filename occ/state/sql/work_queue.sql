-- The work queue's statements, one block per transition; occ.state.work_queue runs them by name.
--
-- Every time is the database clock (clock_timestamp()). Every transition of a claim is fenced
-- by id + occ.claim_is_live(w, :token) (migration 0012: the presented token is the item's and
-- its lease has not run out; PostgreSQL inlines it), and by whether the claim was started (a
-- run claim) or not (a dispatch claim): zero rows means the claim is gone. Only a claimed row
-- holds a token (the controller_work_claim_state CHECK), so the token is the state check too;
-- "state = 'claimed'" is not written beside it, because it lets the planner reach the row
-- through the partial index of claimed rows (controller_work_one_claim_per_lane), reading every
-- live claim, instead of through the primary key. Each transition writes its audit evidence in
-- the same statement through occ.record_work_evidence. Durations arrive in milliseconds.

-- name: enqueue
-- Admit an item, due after :delay_ms; no row when the id exists already (the caller compares).
INSERT INTO occ.controller_work AS w
  (id, kind, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target,
   available_at, created_at, updated_at)
VALUES (:work_id, :kind, :namespace_id, :agent_id, :revision_id, :actor_id, :namespace_target,
        :agent_target, clock_timestamp() + :delay_ms * interval '1 millisecond',
        clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO NOTHING
RETURNING w.*;

-- name: get
-- One item by id.
SELECT w.* FROM occ.controller_work w WHERE w.id = :work_id;

-- name: start
-- Exchange a dispatch token, once, for a run token and the full lease (returns a claim's columns).
UPDATE occ.controller_work w
   SET claim_token = gen_random_uuid(), started_at = clock_timestamp(),
       lease_expires_at = clock_timestamp() + :lease_ms * interval '1 millisecond',
       updated_at = clock_timestamp()
 WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NULL
RETURNING w.id, w.kind, w.claim_token, w.namespace_id, w.actor_id, w.agent_id, w.revision_id,
          w.attempt_count, w.claimed_at, w.lease_expires_at, w.created_at, w.started_at;

-- name: renew
-- Extend a running claim's lease (an expired lease cannot be revived), with an optional progress
-- code. Besides the claim's columns it returns what is left of the granted lease when the row
-- is returned (lease_left_ms, measured on the database clock, so never more than :lease_ms) and
-- that clock (database_now): the worker judges its lease by these, never by its own clock.
UPDATE occ.controller_work w
   SET lease_expires_at = clock_timestamp() + :lease_ms * interval '1 millisecond',
       updated_at = clock_timestamp(),
       last_progress_code = COALESCE(CAST(:progress_code AS text), w.last_progress_code),
       last_progress_at = CASE WHEN CAST(:progress_code AS text) IS NULL THEN w.last_progress_at
                               ELSE clock_timestamp() END
 WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
RETURNING w.id, w.kind, w.claim_token, w.namespace_id, w.actor_id, w.agent_id, w.revision_id,
          w.attempt_count, w.claimed_at, w.lease_expires_at, w.created_at, w.started_at,
          greatest(0, extract(epoch FROM w.lease_expires_at - clock_timestamp()) * 1000)
            AS lease_left_ms,
          clock_timestamp() AS database_now;

-- name: release
-- Give a live claim back (shutdown, or a dispatch that could not be sent): queued now, attempt refunded.
WITH moved AS (
  UPDATE occ.controller_work w
     SET state = 'queued', claim_token = NULL, claimed_at = NULL, started_at = NULL,
         lease_expires_at = NULL, attempt_count = greatest(w.attempt_count - 1, 0),
         available_at = clock_timestamp(), last_progress_code = 'CLAIM_RELEASED',
         last_progress_at = clock_timestamp(), updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token)
  RETURNING w
)
SELECT (moved.w).*, occ.record_work_evidence(moved.w, 'success', 'CLAIM_RELEASED') AS evidence_id
  FROM moved;

-- name: defer_dispatch
-- A dispatch the worker cannot read (a newer release's payload or work kind): queued again after
-- :delay_ms with the attempt refunded, so a mixed fleet never exhausts it.
WITH moved AS (
  UPDATE occ.controller_work w
     SET state = 'queued', claim_token = NULL, claimed_at = NULL, started_at = NULL,
         lease_expires_at = NULL, attempt_count = greatest(w.attempt_count - 1, 0),
         available_at = clock_timestamp() + :delay_ms * interval '1 millisecond',
         last_progress_code = :code, last_progress_at = clock_timestamp(),
         updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NULL
  RETURNING w
)
SELECT (moved.w).*, occ.record_work_evidence(moved.w, 'success', :code) AS evidence_id
  FROM moved;

-- name: complete
-- Finish a running claim successfully with :code (and an optional result).
WITH moved AS (
  UPDATE occ.controller_work w
     SET state = 'succeeded', claim_token = NULL, claimed_at = NULL, started_at = NULL,
         lease_expires_at = NULL, completed_at = clock_timestamp(), reason_code = :code,
         result_data = CAST(:result_data AS jsonb), updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
  RETURNING w
)
SELECT (moved.w).*, occ.record_work_evidence(moved.w, 'success', :code) AS evidence_id
  FROM moved;

-- name: fail
-- Finish a running claim as permanently failed with :code (and an optional result).
WITH moved AS (
  UPDATE occ.controller_work w
     SET state = 'failed_permanent', claim_token = NULL, claimed_at = NULL, started_at = NULL,
         lease_expires_at = NULL, completed_at = clock_timestamp(), reason_code = :code,
         result_data = CAST(:result_data AS jsonb), updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
  RETURNING w
)
SELECT (moved.w).*, occ.record_work_evidence(moved.w, 'failure', :code) AS evidence_id
  FROM moved;

-- name: retry
-- A dependency failed: requeue after backoff keeping the attempt, or fail with :code at the limit.
WITH moved AS (
  UPDATE occ.controller_work w
     SET claim_token = NULL, claimed_at = NULL, started_at = NULL, lease_expires_at = NULL,
         state = CASE WHEN w.attempt_count >= :max_attempts THEN 'failed_permanent'
                      ELSE 'queued' END,
         completed_at = CASE WHEN w.attempt_count >= :max_attempts THEN clock_timestamp() END,
         reason_code = CASE WHEN w.attempt_count >= :max_attempts THEN :code END,
         available_at = CASE WHEN w.attempt_count >= :max_attempts THEN w.available_at
                             ELSE clock_timestamp() + occ.work_backoff(w.attempt_count) END,
         last_progress_code = :code, last_progress_at = clock_timestamp(),
         updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
  RETURNING w
)
SELECT (moved.w).*, occ.record_work_evidence(moved.w, 'failure', :code) AS evidence_id
  FROM moved;

-- name: defer
-- Not done yet: requeue with the attempt refunded, or fail past the convergence deadline (its
-- result: the timeout, and the runtime failure the last pass observed when there was one).
WITH deadline AS (
  -- measured once, so every column below agrees on it
  SELECT id, created_at + :timeout_ms * interval '1 millisecond' <= clock_timestamp() AS passed
    FROM occ.controller_work WHERE id = :work_id
), moved AS (
  UPDATE occ.controller_work w
     SET claim_token = NULL, claimed_at = NULL, started_at = NULL, lease_expires_at = NULL,
         state = CASE WHEN d.passed THEN 'failed_permanent' ELSE 'queued' END,
         completed_at = CASE WHEN d.passed THEN clock_timestamp() END,
         reason_code = CASE WHEN d.passed THEN 'CONVERGENCE_DEADLINE_EXCEEDED' END,
         result_data = CASE WHEN d.passed
                            THEN jsonb_build_object('timeoutMs', CAST(:timeout_ms AS bigint))
                                 || CASE WHEN CAST(:runtime_failure AS text) IS NULL
                                         THEN '{}'::jsonb
                                         ELSE jsonb_build_object(
                                                'runtimeFailure',
                                                CAST(:runtime_failure AS text)) END END,
         attempt_count = CASE WHEN d.passed THEN w.attempt_count
                              ELSE greatest(w.attempt_count - 1, 0) END,
         -- without :delay_ms the item waits the backoff of its attempt count
         available_at = CASE WHEN d.passed THEN w.available_at
                             WHEN CAST(:delay_ms AS bigint) IS NOT NULL
                             THEN clock_timestamp()
                                  + CAST(:delay_ms AS bigint) * interval '1 millisecond'
                             ELSE clock_timestamp() + occ.work_backoff(w.attempt_count) END,
         last_progress_code = :code, last_progress_at = clock_timestamp(),
         updated_at = clock_timestamp()
    FROM deadline d
   WHERE w.id = d.id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
  RETURNING w
)
SELECT (moved.w).*,
       CASE WHEN (moved.w).state = 'failed_permanent'
            THEN occ.record_work_evidence(moved.w, 'failure', 'CONVERGENCE_DEADLINE_EXCEEDED')
            ELSE occ.record_work_evidence(moved.w, 'success', :code) END AS evidence_id
  FROM moved;

-- name: recover_expired
-- Expired claims: a run claim is requeued after backoff keeping its attempt (failed with
-- LEASE_EXPIRED at the limit); a dispatch claim that never started is requeued at once, refunded.
WITH stale AS (
  SELECT id FROM occ.controller_work
   WHERE state = 'claimed' AND lease_expires_at <= clock_timestamp()
   ORDER BY lease_expires_at, id
   LIMIT :limit
   FOR UPDATE SKIP LOCKED
), moved AS (
  UPDATE occ.controller_work w
     SET claim_token = NULL, claimed_at = NULL, started_at = NULL, lease_expires_at = NULL,
         result_data = NULL, updated_at = clock_timestamp(),
         state = CASE WHEN w.started_at IS NOT NULL AND w.attempt_count >= :max_attempts
                      THEN 'failed_permanent' ELSE 'queued' END,
         completed_at = CASE WHEN w.started_at IS NOT NULL AND w.attempt_count >= :max_attempts
                             THEN clock_timestamp() END,
         reason_code = CASE WHEN w.started_at IS NOT NULL AND w.attempt_count >= :max_attempts
                            THEN 'LEASE_EXPIRED' END,
         attempt_count = CASE WHEN w.started_at IS NULL THEN greatest(w.attempt_count - 1, 0)
                              ELSE w.attempt_count END,
         available_at = CASE WHEN w.started_at IS NULL THEN clock_timestamp()
                             WHEN w.attempt_count >= :max_attempts THEN w.available_at
                             ELSE clock_timestamp() + occ.work_backoff(w.attempt_count) END,
         last_progress_code = CASE WHEN w.started_at IS NULL THEN 'DISPATCH_EXPIRED'
                                   ELSE 'LEASE_EXPIRED' END,
         last_progress_at = clock_timestamp()
    FROM stale
   WHERE w.id = stale.id AND w.state = 'claimed' AND w.lease_expires_at <= clock_timestamp()
  RETURNING w
)
SELECT (moved.w).*,
       occ.record_work_evidence(moved.w, 'failure', (moved.w).last_progress_code) AS evidence_id,
       greatest(0, ceil(extract(epoch FROM (moved.w).available_at - clock_timestamp()) * 1000))
         AS available_in_ms
  FROM moved;

-- name: recover_exhausted
-- Queued items that used up their attempts fail with MAX_ATTEMPTS_EXHAUSTED.
WITH exhausted AS (
  SELECT id FROM occ.controller_work
   WHERE state = 'queued' AND attempt_count >= :max_attempts
   ORDER BY available_at, id
   LIMIT :limit
   FOR UPDATE SKIP LOCKED
), moved AS (
  UPDATE occ.controller_work w
     SET state = 'failed_permanent', completed_at = clock_timestamp(),
         reason_code = 'MAX_ATTEMPTS_EXHAUSTED', updated_at = clock_timestamp()
    FROM exhausted
   WHERE w.id = exhausted.id AND w.state = 'queued' AND w.attempt_count >= :max_attempts
  RETURNING w
)
SELECT (moved.w).*,
       occ.record_work_evidence(moved.w, 'failure', 'MAX_ATTEMPTS_EXHAUSTED') AS evidence_id
  FROM moved;

-- name: has_live
-- Whether an item of :kind for the Agent's revision is queued or claimed.
SELECT EXISTS (SELECT 1 FROM occ.controller_work w
                WHERE w.agent_id = :agent_id AND w.revision_id = :revision_id
                  AND w.kind = :kind AND w.state IN ('queued', 'claimed'));

-- name: pending
-- How many items are queued or claimed (delayed ones included): each state counted on its own
-- partial index (controller_work_ready, controller_work_one_claim_per_lane), an index-only scan
-- that reads the pending rows only, however many finished rows the table holds.
SELECT (SELECT count(*) FROM occ.controller_work WHERE state = 'queued')
     + (SELECT count(*) FROM occ.controller_work WHERE state = 'claimed') AS pending;

-- name: database_now
-- The database clock.
SELECT clock_timestamp();
