-- Claiming: the queue's claim statement and the in-flight budget's count and lock;
-- occ.state.work_claims runs them by name. Every time is the database clock (clock_timestamp()).
-- A claim hands out dispatch tokens; the transitions of a claim are in work_queue.sql.

-- name: serialize_claimers
-- Wait for other claim batches of this database (a transaction lock): the in-flight budget holds.
SELECT pg_advisory_xact_lock(3276, 1);

-- name: live_claims
-- How many items are claimed right now (dispatched or running), and how many of them are below
-- the :intent class.
SELECT count(*) AS live, count(*) FILTER (WHERE priority < :intent) AS upkeep
  FROM occ.controller_work WHERE state = 'claimed';

-- name: claim
-- Claim up to :limit ready items, the head of each lane without a live claim, with dispatch
-- tokens: classes by weighted turns, oldest first within a class, at most :upkeep_limit below
-- the :intent class.
WITH busy AS MATERIALIZED (
  -- the lanes that have a live claim, read once
  SELECT lane FROM occ.controller_work WHERE state = 'claimed'
), candidates AS (
  -- a bounded window of each class's range of the ready index (priority, available_at, ...),
  -- oldest first, past the lanes that have a live claim: the cost grows with neither the
  -- backlog nor the depth of another class. A class below :intent reads :upkeep_window rows,
  -- sized to its few seats; NOT IN runs as one hashed subplan over the busy lanes (an
  -- anti-join's generic plan compared every pair); lane is NOT NULL
  SELECT r.id, r.lane, r.priority, r.available_at, r.created_at
    FROM unnest(CAST(:priorities AS smallint[])) AS class(priority)
   CROSS JOIN LATERAL (
     SELECT w.id, w.lane, w.priority, w.available_at, w.created_at
       FROM occ.controller_work w
      WHERE w.state = 'queued' AND w.priority = class.priority
        AND w.available_at <= clock_timestamp() AND w.attempt_count < :max_attempts
        AND w.lane NOT IN (SELECT busy.lane FROM busy)
      ORDER BY w.available_at, w.created_at, w.id
      LIMIT CASE WHEN class.priority >= :intent THEN :window ELSE :upkeep_window END
   ) r
), heads AS (
  -- the first candidate of every lane (its highest class, then its oldest)
  SELECT id, priority, available_at, created_at FROM (
    SELECT c.id, c.priority, c.available_at, c.created_at,
           row_number() OVER (PARTITION BY c.lane
                              ORDER BY c.priority DESC, c.available_at, c.created_at, c.id)
             AS position
      FROM candidates c
  ) ranked
   WHERE position = 1
), turns AS (
  -- weighted turns: the n-th head of a class of weight w (the priority) comes at turn n / w,
  -- so of the seats every class wants each takes its weight's share, and a tie goes to the
  -- higher class
  SELECT id, priority, available_at, created_at,
         row_number() OVER (PARTITION BY priority ORDER BY available_at, created_at, id)
           / CAST(priority AS numeric) AS turn
    FROM heads
), seats AS MATERIALIZED (
  -- the heads in turn order, with at most :upkeep_limit below the intent class (the in-flight
  -- budget keeps room for intent), and no more of them than the claim can use (:heads, twice
  -- the limit: room for heads a racing claimer holds)
  SELECT id, priority, available_at, created_at, turn FROM (
    SELECT t.*, count(*) FILTER (WHERE t.priority < :intent)
                  OVER (ORDER BY t.turn, t.priority DESC, t.available_at, t.created_at, t.id)
                  AS upkeep_seat
      FROM turns t
  ) counted
   WHERE priority >= :intent OR upkeep_seat <= :upkeep_limit
   ORDER BY turn, priority DESC, available_at, created_at, id
   LIMIT :heads
), locked AS (
  -- racing claimers skip each other: row locks with SKIP LOCKED plus a non-blocking advisory
  -- lock on the lane (class 204), taken only on the :heads rows above, never on the backlog;
  -- the limit applies after SKIP LOCKED so a racer holding some heads does not leave this
  -- claimer empty-handed; the conditions are repeated because a row changed since the
  -- snapshot is re-checked against these only
  SELECT w.id FROM occ.controller_work w JOIN seats s ON s.id = w.id
   WHERE w.state = 'queued' AND w.available_at <= clock_timestamp()
     AND w.attempt_count < :max_attempts
     AND pg_try_advisory_xact_lock(204, hashtext(w.lane))
   ORDER BY s.turn, s.priority DESC, s.available_at, s.created_at, s.id
   LIMIT :limit
     FOR UPDATE OF w SKIP LOCKED
)
UPDATE occ.controller_work w
   SET state = 'claimed', attempt_count = w.attempt_count + 1,
       claim_token = gen_random_uuid(), claimed_at = clock_timestamp(),
       lease_expires_at = clock_timestamp() + :dispatch_lease_ms * interval '1 millisecond',
       updated_at = clock_timestamp()
  FROM locked
 WHERE w.id = locked.id AND w.state = 'queued'
RETURNING w.*;
