"""Denials on resources the caller cannot see are audited in aggregate: one row per principal,
resource kind and minute, with a count, so an outsider cannot grow the audit table at request
rate.

* ``occ.tally_hidden_denial`` (``SECURITY DEFINER``: the application role may not update audit
  rows) adds one to the count of the caller's row for the resource kind in the current minute,
  or, for the minute's first denial, appends that row as the denial's own event (its action,
  resource and details) with ``details.hiddenDenials`` = 1; calls for one principal and kind are
  serialised by a transaction-scoped advisory lock.
* ``audit_events_hidden_denials``: those rows by principal, kind and time (partial).
* The append-only trigger now lets exactly one change through: the count of such a row going
  up, every other column and detail unchanged. Any other UPDATE or DELETE is still refused.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0020"
down_revision = "0019"

UPGRADE = r"""
CREATE INDEX audit_events_hidden_denials
  ON occ.audit_events (actor_id, resource_kind, occurred_at)
  WHERE kind = 'authorization_denial' AND details ? 'hiddenDenials';

CREATE FUNCTION occ.guard_audit_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND OLD.kind = 'authorization_denial' AND OLD.details ? 'hiddenDenials'
     AND (NEW.details - 'hiddenDenials') = (OLD.details - 'hiddenDenials')
     AND (NEW.details ->> 'hiddenDenials')::bigint > (OLD.details ->> 'hiddenDenials')::bigint
     AND (NEW.id, NEW.sequence, NEW.occurred_at, NEW.kind, NEW.action, NEW.actor_id,
          NEW.namespace_id, NEW.resource_kind, NEW.resource_id, NEW.work_id, NEW.outcome)
         IS NOT DISTINCT FROM
         (OLD.id, OLD.sequence, OLD.occurred_at, OLD.kind, OLD.action, OLD.actor_id,
          OLD.namespace_id, OLD.resource_kind, OLD.resource_id, OLD.work_id, OLD.outcome)
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION '% rows are immutable', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$;
DROP TRIGGER audit_events_append_only ON occ.audit_events;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON occ.audit_events
  FOR EACH ROW EXECUTE FUNCTION occ.guard_audit_event();

CREATE FUNCTION occ.tally_hidden_denial(
  p_actor_id text, p_action text, p_namespace_id text, p_resource_kind text, p_resource_id text,
  p_details jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  minute timestamptz := date_trunc('minute', statement_timestamp());
  found_id text;
  counted bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(
    'occ.hidden-denial:' || p_actor_id || ':' || p_resource_kind, 0));
  SELECT e.id INTO found_id FROM occ.audit_events e
   WHERE e.kind = 'authorization_denial' AND e.details ? 'hiddenDenials'
     AND e.actor_id = p_actor_id AND e.resource_kind = p_resource_kind
     AND e.occurred_at >= minute AND e.occurred_at < minute + interval '1 minute'
   ORDER BY e.occurred_at DESC LIMIT 1;
  IF found_id IS NULL THEN
    PERFORM occ.append_audit_event(
      'authorization_denial', p_action, p_actor_id, p_namespace_id, p_resource_kind,
      p_resource_id, NULL, 'denied',
      coalesce(p_details, '{}') || jsonb_build_object('hiddenDenials', 1, 'minute', minute));
    RETURN 1;
  END IF;
  UPDATE occ.audit_events e
     SET details = jsonb_set(e.details, '{hiddenDenials}',
                             to_jsonb((e.details ->> 'hiddenDenials')::bigint + 1))
   WHERE e.id = found_id
     AND e.occurred_at >= minute AND e.occurred_at < minute + interval '1 minute'
  RETURNING (e.details ->> 'hiddenDenials')::bigint INTO counted;
  RETURN counted;
END
$$;
REVOKE ALL ON FUNCTION occ.tally_hidden_denial(text, text, text, text, text, jsonb) FROM PUBLIC;
"""

GRANTS = r"""
GRANT EXECUTE ON FUNCTION occ.tally_hidden_denial(text, text, text, text, text, jsonb) TO occ_app;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(
        "DROP FUNCTION occ.tally_hidden_denial(text, text, text, text, text, jsonb); "
        "DROP TRIGGER audit_events_append_only ON occ.audit_events; "
        "CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON occ.audit_events "
        "FOR EACH ROW EXECUTE FUNCTION occ.reject_row_mutation(); "
        "DROP FUNCTION occ.guard_audit_event(); "
        "DROP INDEX occ.audit_events_hidden_denials"
    )
