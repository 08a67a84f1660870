-- Retention: the statements that remove history once nothing reads it any more; each removes
-- at most :limit rows, oldest first, skipping rows another transaction holds, so a caller runs
-- it in short transactions of its own until a batch comes back short.

-- name: prune_work
-- One batch of terminal work rows of :state older than :older_than_ms (occ.prune_work,
-- migrations 0015 and 0026: the newest row of each lane, kind and outcome, the newest
-- deployment of a lane that activated its revision, and an active revision's deployment are
-- kept), resuming after (:after_finished, :after_id).
SELECT pruned, scanned, last_finished, last_id
  FROM occ.prune_work(:state, :older_than_ms, :after_finished, :after_id, :limit);

-- name: prune_idempotency
-- One batch of idempotency records older than :older_than_ms (no longer honoured).
WITH old AS (
  SELECT principal_id, route, key FROM occ.idempotency_keys
   WHERE created_at < clock_timestamp() - :older_than_ms * interval '1 millisecond'
   ORDER BY created_at
   LIMIT :limit
     FOR UPDATE SKIP LOCKED
)
DELETE FROM occ.idempotency_keys k
 USING old
 WHERE (k.principal_id, k.route, k.key) = (old.principal_id, old.route, old.key)
   AND k.created_at < clock_timestamp() - :older_than_ms * interval '1 millisecond';
