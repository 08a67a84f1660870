"""A deployment that missed its convergence deadline may keep the runtime failure its last pass
observed: ``occ.work_result_is_valid`` accepts ``{"timeoutMs", "runtimeFailure"}`` (a reason
code) beside ``{"timeoutMs"}`` for a ``CONVERGENCE_DEADLINE_EXCEEDED`` row. Nothing else
changes; rows written before stay valid, and the previous release never writes the new key.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0019"
down_revision = "0018"

_FUNCTION = r"""
CREATE OR REPLACE FUNCTION occ.work_result_is_valid(state text, reason_code text, result jsonb)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN result IS NULL THEN true
    WHEN jsonb_typeof(result) <> 'object' THEN false
    WHEN state = 'succeeded' AND reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE') THEN
      (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(result) k) = ARRAY['warnings']
      AND jsonb_typeof(result -> 'warnings') = 'array'
      AND jsonb_array_length(result -> 'warnings') <= 64
      AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(result -> 'warnings') w
         WHERE jsonb_typeof(w) <> 'object'
            OR (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(w) k)
               IS DISTINCT FROM ARRAY['code', 'detail']
            OR jsonb_typeof(w -> 'code') <> 'string'
            OR (w ->> 'code') !~ '^[A-Z][A-Z0-9_]{0,63}$'
            OR jsonb_typeof(w -> 'detail') <> 'string'
            OR (w ->> 'detail') !~ '^[A-Za-z0-9._~:@/ -]{1,200}$')
    WHEN state = 'failed_permanent' AND reason_code = 'CONVERGENCE_DEADLINE_EXCEEDED' THEN
      (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(result) k)
        IN (ARRAY['timeoutMs'], %(keys)s)
      AND jsonb_typeof(result -> 'timeoutMs') = 'number'
      AND (result ->> 'timeoutMs') ~ '^[1-9][0-9]{0,15}$'
      AND (result ->> 'timeoutMs')::bigint <= 9007199254740991
      %(failure)s
    ELSE false
  END
$$;
"""

UPGRADE = _FUNCTION % {
    "keys": "ARRAY['runtimeFailure', 'timeoutMs']",
    "failure": "AND (NOT result ? 'runtimeFailure'"
    " OR (jsonb_typeof(result -> 'runtimeFailure') = 'string'"
    " AND (result ->> 'runtimeFailure') ~ '^[A-Z][A-Z0-9_]{0,63}$'))",
}

DOWNGRADE = _FUNCTION % {"keys": "ARRAY['timeoutMs']", "failure": ""}


def upgrade() -> None:
    steps.execute(UPGRADE)


def downgrade() -> None:
    steps.execute(DOWNGRADE)
