-- The write of an admitted deploy in one statement (one round trip under the Agent's row lock).
-- The checks ran before it against the Agent as read; the statement writes only while the row
-- still holds that draft, so a deploy never pins what it did not check.

-- name: write_deploy
-- Lock the Agent, take its next revision number and set desired running; insert the revision, its reconcile work and the audit event (none past the Agent's revision quota).
WITH locked AS (
  SELECT id, desired_runtime_state FROM occ.agents
   WHERE id = :agent_id AND namespace_id = :namespace_id
     FOR UPDATE
), counted AS (
  -- no row (and nothing below written) when the Agent is deleting, its draft changed since
  -- the checks or it made its quota of revisions; the row lock is taken all the same
  UPDATE occ.agents a
     SET revision_counter = a.revision_counter + 1,
         desired_runtime_state = 'running', updated_at = clock_timestamp()
    FROM locked
   WHERE a.id = locked.id AND a.status = 'active'
     AND a.revision_counter < coalesce(
           (SELECT q.revisions_per_agent FROM occ.namespace_quotas q
             WHERE q.namespace_id = :namespace_id), :revision_limit)
     AND (a.configuration_id, a.harness_id, a.harness_version, a.execution_mode,
          a.harness_auth_secret_id, a.harness_auth_account_id, a.compute_driver,
          a.service_principal_id)
         IS NOT DISTINCT FROM
         (:configuration_id, :harness_id, :harness_version, :execution_mode,
          :harness_auth_secret_id, :harness_auth_account_id, :compute_driver,
          :service_principal_id)
  RETURNING a.revision_counter, locked.desired_runtime_state AS previous_desired_runtime_state
), revision AS (
  INSERT INTO occ.agent_revisions
    (id, namespace_id, agent_id, revision_number, actor_id, configuration_id,
     configuration_generation, configuration_document, harness_id, harness_version,
     harness_mode, compute_driver, harness_auth, service_principal_id)
  SELECT :revision_id, :namespace_id, :agent_id, counted.revision_counter, :actor_id,
         :configuration_id, :configuration_generation, CAST(:configuration_document AS jsonb),
         :harness_id, :harness_version, :execution_mode, :compute_driver,
         CAST(:harness_auth AS jsonb), :service_principal_id
    FROM counted
  RETURNING *
), work AS (
  INSERT INTO occ.controller_work AS w
    (id, kind, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target,
     available_at, created_at, updated_at)
  SELECT :work_id, :kind, :namespace_id, :agent_id, revision.id, :actor_id, :namespace_target,
         :agent_target, clock_timestamp(), clock_timestamp(), clock_timestamp()
    FROM revision
  RETURNING w.id
)
-- the event's details gain the two facts only the locked row knows
SELECT revision.*, counted.previous_desired_runtime_state,
       occ.append_audit_event(:event_kind, :action, :actor_id, :namespace_id, :resource_kind,
                              :resource_id, :work_id, :outcome,
                              CAST(:details AS jsonb)
                                || jsonb_build_object(
                                     'revisionNumber', revision.revision_number,
                                     'previousDesiredRuntimeState',
                                     counted.previous_desired_runtime_state))
         AS event_id
  FROM revision CROSS JOIN counted CROSS JOIN work;
