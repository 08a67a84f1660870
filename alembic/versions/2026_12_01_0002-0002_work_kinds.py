"""Work kinds and one audit writer: a ``kind`` column tied to the work id's shape, and the SQL
functions every audit row and every queue transition go through.

* ``controller_work.kind`` (backfilled from the id) names what an item is for; the shape CHECK
  ties each kind to its id, owner columns and targets.
* ``occ.append_audit_event`` is the one writer of audit rows: the repositories, the queue's
  statements (through ``occ.record_work_evidence``) and the definer function call it.
* ``occ.work_backoff`` is the retry delay every queue statement uses.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0002"
down_revision = "0001"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

FUNCTIONS = r"""
CREATE FUNCTION occ.append_audit_event(
  p_kind text, p_action text, p_actor_id text, p_namespace_id text, p_resource_kind text,
  p_resource_id text, p_work_id text, p_outcome text, p_details jsonb)
RETURNS text LANGUAGE sql AS $$
  INSERT INTO occ.audit_events
    (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id, outcome,
     details)
  VALUES ('aud_' || gen_random_uuid(), p_kind, p_action, p_actor_id, p_namespace_id,
          p_resource_kind, p_resource_id, p_work_id, p_outcome, coalesce(p_details, '{}'))
  RETURNING id
$$;

CREATE FUNCTION occ.record_work_evidence(
  p_work occ.controller_work, p_outcome text, p_reason_code text)
RETURNS text LANGUAGE sql AS $$
  SELECT occ.append_audit_event(
    'mutation', 'reconcile', (p_work).actor_id, (p_work).namespace_id,
    CASE WHEN (p_work).revision_id IS NOT NULL THEN 'agent_revision'
         WHEN (p_work).agent_id IS NOT NULL THEN 'agent' ELSE 'namespace' END,
    coalesce((p_work).revision_id, (p_work).agent_id, (p_work).namespace_id),
    (p_work).id, p_outcome,
    jsonb_build_object('reasonCode', p_reason_code, 'attemptCount', (p_work).attempt_count,
                       'workId', (p_work).id)
      || CASE WHEN (p_work).state = 'failed_permanent'
              THEN jsonb_build_object('final', true) ELSE '{}'::jsonb END)
$$;

-- min(300 s, 1 s * 2^(attempts - 1)) with equal jitter
CREATE FUNCTION occ.work_backoff(p_attempts integer) RETURNS interval
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT least(300000, 1000 * power(2, least(greatest(p_attempts - 1, 0), 30)))
         * (0.5 + random() / 2) * interval '1 millisecond'
$$;
"""

KIND = rf"""
ALTER TABLE occ.controller_work ADD COLUMN kind text;
UPDATE occ.controller_work SET kind = CASE
    WHEN agent_id IS NULL THEN 'namespace_' || namespace_target
    WHEN revision_id IS NULL THEN 'agent_' || agent_target
    WHEN id LIKE '%:maintenance:%' THEN 'revision_maintenance'
    ELSE 'revision_reconcile' END;
ALTER TABLE occ.controller_work ALTER COLUMN kind SET NOT NULL;
ALTER TABLE occ.controller_work DROP CONSTRAINT controller_work_shape;
ALTER TABLE occ.controller_work ADD CONSTRAINT controller_work_shape CHECK (
  CASE kind
    WHEN 'namespace_ready' THEN
      agent_id IS NULL AND revision_id IS NULL AND agent_target IS NULL
      AND namespace_target = 'ready' AND id = 'namespace:' || namespace_id || ':reconcile:ready'
    WHEN 'namespace_deleted' THEN
      agent_id IS NULL AND revision_id IS NULL AND agent_target IS NULL
      AND namespace_target = 'deleted'
      AND id = 'namespace:' || namespace_id || ':reconcile:deleted'
    WHEN 'agent_stopped' THEN
      agent_id IS NOT NULL AND revision_id IS NULL AND namespace_target IS NULL
      AND agent_target = 'stopped'
      AND id ~ ('^agent:' || agent_id || ':reconcile:stopped:{UUID4}$')
    WHEN 'agent_deleted' THEN
      agent_id IS NOT NULL AND revision_id IS NULL AND namespace_target IS NULL
      AND agent_target = 'deleted' AND id = 'agent:' || agent_id || ':reconcile:deleted'
    WHEN 'revision_reconcile' THEN
      agent_id IS NOT NULL AND revision_id IS NOT NULL
      AND namespace_target IS NULL AND agent_target IS NULL
      AND id = 'agent_revision:' || revision_id || ':reconcile'
    WHEN 'revision_maintenance' THEN
      agent_id IS NOT NULL AND revision_id IS NOT NULL
      AND namespace_target IS NULL AND agent_target IS NULL
      AND id ~ ('^agent_revision:' || revision_id || ':maintenance:[0-9]{{1,15}}$')
    ELSE false
  END);
"""

OLD_SHAPE = rf"""
ALTER TABLE occ.controller_work DROP CONSTRAINT controller_work_shape;
ALTER TABLE occ.controller_work DROP COLUMN kind;
ALTER TABLE occ.controller_work ADD CONSTRAINT controller_work_shape CHECK (
    (agent_id IS NULL AND revision_id IS NULL AND agent_target IS NULL
      AND namespace_target IN ('ready', 'deleted')
      AND id = 'namespace:' || namespace_id || ':reconcile:' || namespace_target)
    OR (agent_id IS NOT NULL AND revision_id IS NULL AND namespace_target IS NULL
      AND ((agent_target = 'deleted' AND id = 'agent:' || agent_id || ':reconcile:deleted')
        OR (agent_target = 'stopped'
            AND id ~ ('^agent:' || agent_id || ':reconcile:stopped:{UUID4}$'))))
    OR (agent_id IS NOT NULL AND revision_id IS NOT NULL
      AND namespace_target IS NULL AND agent_target IS NULL
      AND (id = 'agent_revision:' || revision_id || ':reconcile'
        OR id ~ ('^agent_revision:' || revision_id || ':maintenance:[0-9]{{1,15}}$'))));
"""

_FINALIZE_HEAD = r"""
CREATE OR REPLACE FUNCTION occ.finalize_agent_deletion(p_work_id text, p_claim_token uuid)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work occ.controller_work%ROWTYPE;
  agent occ.agents%ROWTYPE;
  revision_ids text[];
BEGIN
  SELECT * INTO work FROM occ.controller_work
   WHERE id = p_work_id AND state = 'claimed' AND claim_token = p_claim_token
     AND started_at IS NOT NULL AND lease_expires_at > clock_timestamp()
     AND agent_target = 'deleted'
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.namespaces WHERE id = work.namespace_id FOR UPDATE;
  SELECT * INTO agent FROM occ.agents
   WHERE id = work.agent_id AND namespace_id = work.namespace_id FOR UPDATE;
  IF NOT FOUND OR agent.status <> 'deleting' THEN
    RETURN false;
  END IF;
  -- the locks above may have waited: the lease must still be live now
  IF NOT EXISTS (SELECT 1 FROM occ.controller_work
                  WHERE id = p_work_id AND claim_token = p_claim_token
                    AND lease_expires_at > clock_timestamp()) THEN
    RETURN false;
  END IF;
"""

_FINALIZE_TAIL = r"""
  SELECT coalesce(array_agg(id), '{}') INTO revision_ids
    FROM occ.agent_revisions WHERE agent_id = agent.id;
  UPDATE occ.agents SET active_revision_id = NULL, endpoint = NULL WHERE id = agent.id;
  DELETE FROM occ.access_bindings
   WHERE principal_id = agent.service_principal_id
      OR (resource_kind = 'agent' AND resource_id = agent.id)
      OR (resource_kind = 'agent_revision' AND resource_id = ANY (revision_ids));
  DELETE FROM occ.restrictions
   WHERE principal_id = agent.service_principal_id
      OR resource_id = agent.id OR resource_id = ANY (revision_ids);
  DELETE FROM occ.api_keys WHERE principal_id = agent.service_principal_id;
  DELETE FROM occ.controller_work WHERE agent_id = agent.id;
  DELETE FROM occ.agent_revisions WHERE agent_id = agent.id;
  DELETE FROM occ.agents WHERE id = agent.id;
  DELETE FROM occ.principals WHERE id = agent.service_principal_id;
  RETURN true;
END
$$;
"""

FINALIZE_WITH_WRITER = (
    _FINALIZE_HEAD
    + r"""
  PERFORM occ.append_audit_event(
    'mutation', 'agents.lifecycle.delete', work.actor_id, work.namespace_id, 'agent', agent.id,
    work.id, 'success',
    jsonb_build_object('reasonCode', 'AGENT_DELETED', 'attemptCount', work.attempt_count,
                       'workId', work.id));
"""
    + _FINALIZE_TAIL
)

FINALIZE_WITH_INSERT = (
    _FINALIZE_HEAD
    + r"""
  INSERT INTO occ.audit_events
    (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id, outcome,
     details)
  VALUES ('aud_' || gen_random_uuid(), 'mutation', 'agents.lifecycle.delete', work.actor_id,
          work.namespace_id, 'agent', agent.id, work.id, 'success',
          jsonb_build_object('reasonCode', 'AGENT_DELETED', 'attemptCount', work.attempt_count,
                             'workId', work.id));
"""
    + _FINALIZE_TAIL
)

GRANTS = r"""
GRANT EXECUTE ON FUNCTION
  occ.append_audit_event(text, text, text, text, text, text, text, text, jsonb),
  occ.record_work_evidence(occ.controller_work, text, text),
  occ.work_backoff(integer) TO occ_app;
"""


def upgrade() -> None:
    steps.execute(KIND)
    steps.execute(FUNCTIONS)
    steps.execute(FINALIZE_WITH_WRITER)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(FINALIZE_WITH_INSERT)
    steps.execute(
        "DROP FUNCTION occ.record_work_evidence(occ.controller_work, text, text), "
        "occ.append_audit_event(text, text, text, text, text, text, text, text, jsonb), "
        "occ.work_backoff(integer)"
    )
    steps.execute(OLD_SHAPE)
