-- A claim's start joined with the read-only reload of what its pass needs, in one statement
-- (one round trip, one commit). The UPDATE is work_queue.sql's start, word for word (a test
-- holds them equal); the reload reads the statement's snapshot and changes nothing.

-- name: start_namespace_work
-- Start a Namespace item's claim and read its Namespace (ns_* columns NULL when the row is gone).
WITH started AS (
  UPDATE occ.controller_work w
     SET claim_token = gen_random_uuid(), started_at = clock_timestamp(),
         lease_expires_at = clock_timestamp() + :lease_ms * interval '1 millisecond',
         updated_at = clock_timestamp()
   WHERE w.id = :work_id AND occ.claim_is_live(w, :token) AND w.started_at IS NULL
  RETURNING w.id, w.kind, w.claim_token, w.namespace_id, w.actor_id, w.agent_id, w.revision_id,
            w.attempt_count, w.claimed_at, w.lease_expires_at, w.created_at, w.started_at
)
SELECT s.*,
       n.id AS ns_id, n.name AS ns_name, n.existing_namespace AS ns_existing_namespace,
       n.status AS ns_status, n.created_by AS ns_created_by, n.created_at AS ns_created_at,
       n.updated_at AS ns_updated_at, n.deleted_at AS ns_deleted_at
  FROM started s LEFT JOIN occ.namespaces n ON n.id = s.namespace_id;
