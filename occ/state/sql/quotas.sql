-- Namespace quotas: an administrator's overrides, and what a Namespace uses of each quota.
-- A create checks its quota after ``lock_quota`` (its own statement, so that under READ
-- COMMITTED the count that follows sees every create that held the lock before it).

-- name: lock_quota
-- Serialise the creates of one Namespace that count against one quota, until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('occ.quota:' || :namespace_id || ':' || :quota, 0));

-- name: usage
-- What the Namespace uses of each quota (revisions: the most any one of its Agents has made).
SELECT (SELECT count(*) FROM occ.agents WHERE namespace_id = :namespace_id) AS agents,
       (SELECT coalesce(max(revision_counter), 0) FROM occ.agents
         WHERE namespace_id = :namespace_id) AS revisions_per_agent,
       (SELECT count(*) FROM occ.secrets WHERE namespace_id = :namespace_id) AS secrets,
       (SELECT count(*) FROM occ.configurations WHERE namespace_id = :namespace_id)
         AS configurations;

-- name: overrides
-- The Namespace's overrides (no row: every quota is the installation's default).
SELECT agents, revisions_per_agent, secrets, configurations
  FROM occ.namespace_quotas
 WHERE namespace_id = :namespace_id;

-- name: put_overrides
-- Set the Namespace's overrides (NULL: the default), creating its row the first time.
INSERT INTO occ.namespace_quotas AS q
  (namespace_id, agents, revisions_per_agent, secrets, configurations, updated_by)
VALUES (:namespace_id, :agents, :revisions_per_agent, :secrets, :configurations, :updated_by)
ON CONFLICT (namespace_id) DO UPDATE
   SET agents = excluded.agents, revisions_per_agent = excluded.revisions_per_agent,
       secrets = excluded.secrets, configurations = excluded.configurations,
       updated_by = excluded.updated_by, updated_at = clock_timestamp()
RETURNING q.agents, q.revisions_per_agent, q.secrets, q.configurations;

-- name: revisions_made
-- How many revisions one Agent has made (its latest revision's number).
SELECT revision_counter FROM occ.agents WHERE id = :agent_id;
