"""The claim fence written once: ``occ.claim_is_live(w, token)``.

Every statement that changes a claimed work item, or publishes what its pass did, asks whether
the presented token still holds the item: the token is the item's and its lease has not run
out, on the database clock. The condition used to be written out in each statement; each now
calls this SQL function, which PostgreSQL inlines (the plans stay the same: the row is read by
its primary key and the expanded condition filters it). Whether the claim was started (a run
claim) or not yet (a dispatch claim) stays written beside it: that is the claim's state, not
its liveness. The Agent-deletion finalizer calls it too.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0012"
down_revision = "0011"

FENCE = r"""
CREATE FUNCTION occ.claim_is_live(w occ.controller_work, p_token uuid) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
  SELECT w.claim_token = p_token AND w.lease_expires_at > clock_timestamp()
$$;
"""

_FINALIZE = r"""
CREATE OR REPLACE FUNCTION occ.finalize_agent_deletion(p_work_id text, p_claim_token uuid)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work occ.controller_work%ROWTYPE;
  agent occ.agents%ROWTYPE;
  revision_ids text[];
BEGIN
  SELECT w.* INTO work FROM occ.controller_work w
   WHERE w.id = p_work_id AND {held} AND w.started_at IS NOT NULL
     AND w.agent_target = 'deleted'
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
  IF NOT EXISTS (SELECT 1 FROM occ.controller_work w WHERE w.id = p_work_id AND {held}) THEN
    RETURN false;
  END IF;
  PERFORM occ.append_audit_event(
    'mutation', 'agents.lifecycle.delete', work.actor_id, work.namespace_id, 'agent', agent.id,
    work.id, 'success',
    jsonb_build_object('reasonCode', 'AGENT_DELETED', 'attemptCount', work.attempt_count,
                       'workId', work.id));
  SELECT coalesce(array_agg(id), '{{}}') INTO revision_ids
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

FINALIZE_WITH_FENCE = _FINALIZE.format(held="occ.claim_is_live(w, p_claim_token)")
FINALIZE_WRITTEN_OUT = _FINALIZE.format(
    held="w.claim_token = p_claim_token AND w.lease_expires_at > clock_timestamp()"
)


def upgrade() -> None:
    steps.execute(FENCE)
    steps.grant_to_app_role(
        "GRANT EXECUTE ON FUNCTION occ.claim_is_live(occ.controller_work, uuid) TO occ_app"
    )
    steps.execute(FINALIZE_WITH_FENCE)


def downgrade() -> None:
    steps.execute(FINALIZE_WRITTEN_OUT)
    steps.execute("DROP FUNCTION occ.claim_is_live(occ.controller_work, uuid)")
