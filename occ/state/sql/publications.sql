-- Publications that end a running claim and record what its pass did, in one fenced statement
-- (run in autocommit: one round trip, one commit). The fence is occ.claim_is_live, as in every
-- transition of work_queue.sql; every later part reads the fenced UPDATE's row, so a stale claim
-- changes nothing.

-- name: complete_namespace_ready
-- Complete a namespace_ready claim with :code, move its Namespace from provisioning to ready and audit the ensure.
WITH moved AS (
  UPDATE occ.controller_work w
     SET state = 'succeeded', claim_token = NULL, claimed_at = NULL, started_at = NULL,
         lease_expires_at = NULL, completed_at = clock_timestamp(), reason_code = :code,
         result_data = NULL, updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NOT NULL
     AND w.kind = 'namespace_ready'
  RETURNING w
), ready AS (
  UPDATE occ.namespaces n
     SET status = 'ready', updated_at = clock_timestamp()
    FROM moved
   WHERE n.id = (moved.w).namespace_id AND n.deleted_at IS NULL AND n.status = 'provisioning'
  RETURNING n.id
)
-- the work's evidence first, then the lifecycle event (the target list runs left to right)
SELECT occ.record_work_evidence(moved.w, 'success', :code) AS evidence_id,
       occ.append_audit_event(:kind, :action, :actor_id, :namespace_id, :resource_kind,
                              :resource_id, :work_id, :outcome, CAST(:details AS jsonb))
         AS event_id,
       (SELECT count(*) FROM ready) AS transitioned
  FROM moved;
