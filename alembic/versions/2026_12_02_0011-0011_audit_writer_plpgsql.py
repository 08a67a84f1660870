"""The audit writer ``occ.append_audit_event`` in PL/pgSQL: its INSERT is planned once per
connection instead of on every call.

PostgreSQL cannot inline a SQL-language function whose body is an INSERT, so each call parsed
and planned the body afresh; a PL/pgSQL function keeps the plan of its statement for the
session. Every completion of a work item and every audited API change calls it once. Same
signature, same row, same returned id, same grants (``CREATE OR REPLACE`` keeps them).
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0011"
down_revision = "0010"

_SIGNATURE = """
CREATE OR REPLACE FUNCTION occ.append_audit_event(
  p_kind text, p_action text, p_actor_id text, p_namespace_id text, p_resource_kind text,
  p_resource_id text, p_work_id text, p_outcome text, p_details jsonb)
RETURNS text"""

_INSERT = """
  INSERT INTO occ.audit_events
    (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id, outcome,
     details)
  VALUES ('aud_' || gen_random_uuid(), p_kind, p_action, p_actor_id, p_namespace_id,
          p_resource_kind, p_resource_id, p_work_id, p_outcome, coalesce(p_details, '{}'))
  RETURNING id"""


def upgrade() -> None:
    steps.execute(
        f"{_SIGNATURE} LANGUAGE plpgsql AS $$\n"
        f"DECLARE\n  event_id text;\nBEGIN{_INSERT} INTO event_id;\n  RETURN event_id;\nEND\n$$"
    )


def downgrade() -> None:
    steps.execute(f"{_SIGNATURE} LANGUAGE sql AS $${_INSERT}\n$$")
