"""Audit events partitioned by month, so history leaves a month at a time.

``audit_events`` becomes a table partitioned by ``occurred_at``: one partition per calendar
month (``audit_events_yYYYYmMM``, UTC) and a default one that only catches what no month
partition covers. Rows stay append-only (the row trigger now sits on the partitioned table);
a month goes as a whole, once exported (``occ audit export``), by ``occ audit drop-partition``,
which the owner runs and which audits itself. ``occ.ensure_audit_partitions`` (``SECURITY
DEFINER``: the application role creates no tables) creates the months ahead; beat's
``occ.prune`` calls it. ``audit_exports`` records each month exported.

The primary key and the sequence's unique key include ``occurred_at`` (PostgreSQL requires the
partition key in them); ids and sequence numbers stay unique as they are made. The existing
rows are copied into the new table in one statement, then the keys and indexes are built;
the migration holds the table for that time (docs/operations.md has the measured time per
million rows).
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0018"
down_revision = "0017"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def _renamed(suffix: str) -> str:
    """``audit_events`` and its indexes renamed out of the way, to ``audit_events_{suffix}``."""
    indexes = ("pkey", "sequence_key", "namespace", "resource", "work")
    renames = "".join(
        f"ALTER INDEX occ.audit_events_{index} RENAME TO audit_events_{suffix}_{index};\n"
        for index in indexes
    )
    return f"{renames}ALTER TABLE occ.audit_events RENAME TO audit_events_{suffix};\n"


def _audit_table(keys: str, partitioning: str) -> str:
    """``audit_events`` as migration 0001 made it, with ``keys`` (constraints) and
    ``partitioning`` (a ``PARTITION BY`` clause or nothing)."""
    return rf"""CREATE TABLE occ.audit_events (
  id text NOT NULL,
  sequence bigint GENERATED ALWAYS AS IDENTITY,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind text NOT NULL,
  action text NOT NULL,
  actor_id text NOT NULL,
  namespace_id text,
  resource_kind text,
  resource_id text,
  work_id text,
  outcome text NOT NULL,
  details jsonb NOT NULL DEFAULT '{{}}'::jsonb,{keys}
  CONSTRAINT audit_events_id_format CHECK (id ~ '^aud_{UUID4}$'),
  CONSTRAINT audit_events_kind_valid
    CHECK (kind IN ('bootstrap', 'mutation', 'access', 'authorization_denial')),
  CONSTRAINT audit_events_action_format CHECK (action ~ '^[a-z][a-z0-9_.:-]{{0,127}}$'),
  CONSTRAINT audit_events_outcome_valid CHECK (outcome IN ('success', 'denied', 'failure')),
  CONSTRAINT audit_events_details_object CHECK (jsonb_typeof(details) = 'object')
){partitioning};
"""


_INDEXES_AND_TRIGGER = r"""
CREATE INDEX audit_events_namespace ON occ.audit_events (namespace_id, sequence);
CREATE INDEX audit_events_resource ON occ.audit_events (resource_id, sequence);
CREATE INDEX audit_events_work ON occ.audit_events (work_id, sequence);
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON occ.audit_events
  FOR EACH ROW EXECUTE FUNCTION occ.reject_row_mutation();
"""

UPGRADE = (
    _renamed("unpartitioned")
    + _audit_table("", " PARTITION BY RANGE (occurred_at)")
    + r"""CREATE TABLE occ.audit_events_default PARTITION OF occ.audit_events DEFAULT;

CREATE TABLE occ.audit_exports (
  partition_name text NOT NULL,
  range_start timestamptz NOT NULL,
  range_end timestamptz NOT NULL,
  events bigint NOT NULL,
  last_sequence bigint,
  exported_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT audit_exports_pkey PRIMARY KEY (partition_name)
);

-- the month partitions of [p_from, the month p_months_ahead after the current one]; those
-- that exist are left alone
CREATE FUNCTION occ.ensure_audit_partitions(p_from timestamptz, p_months_ahead integer)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_month timestamptz := date_trunc('month', p_from AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  v_last timestamptz := date_trunc('month', clock_timestamp() AT TIME ZONE 'UTC')
                          AT TIME ZONE 'UTC' + make_interval(months => p_months_ahead);
  v_name text;
  v_made integer := 0;
BEGIN
  WHILE v_month <= v_last LOOP
    v_name := 'audit_events_' || to_char(v_month AT TIME ZONE 'UTC', '"y"YYYY"m"MM');
    IF to_regclass('occ.' || v_name) IS NULL THEN
      EXECUTE format(
        'CREATE TABLE occ.%I PARTITION OF occ.audit_events FOR VALUES FROM (%L) TO (%L)',
        v_name, v_month, v_month + interval '1 month');
      v_made := v_made + 1;
    END IF;
    v_month := v_month + interval '1 month';
  END LOOP;
  RETURN v_made;
END
$$;
REVOKE ALL ON FUNCTION occ.ensure_audit_partitions(timestamptz, integer) FROM PUBLIC;

SELECT occ.ensure_audit_partitions(
  coalesce((SELECT min(occurred_at) FROM occ.audit_events_unpartitioned), clock_timestamp()), 2);

INSERT INTO occ.audit_events
  (id, sequence, occurred_at, kind, action, actor_id, namespace_id, resource_kind, resource_id,
   work_id, outcome, details)
OVERRIDING SYSTEM VALUE
SELECT id, sequence, occurred_at, kind, action, actor_id, namespace_id, resource_kind,
       resource_id, work_id, outcome, details
  FROM occ.audit_events_unpartitioned;

DO $restart$
BEGIN
  EXECUTE format('ALTER TABLE occ.audit_events ALTER COLUMN sequence RESTART WITH %s',
                 coalesce((SELECT max(sequence) FROM occ.audit_events), 0) + 1);
END
$restart$;

DROP TABLE occ.audit_events_unpartitioned;

-- the keys and indexes are built once the rows are in (a sort per partition, much faster than
-- inserting a random id into a growing index per row)
ALTER TABLE occ.audit_events
  ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id, occurred_at),
  ADD CONSTRAINT audit_events_sequence_key UNIQUE (sequence, occurred_at);
"""
    + _INDEXES_AND_TRIGGER
)

GRANTS = r"""
GRANT SELECT, INSERT ON occ.audit_events TO occ_app;
GRANT SELECT ON occ.audit_exports TO occ_app;
GRANT EXECUTE ON FUNCTION occ.ensure_audit_partitions(timestamptz, integer) TO occ_app;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    keys = """
  CONSTRAINT audit_events_pkey PRIMARY KEY (id),
  CONSTRAINT audit_events_sequence_key UNIQUE (sequence),"""
    steps.execute(
        _renamed("partitioned")
        + _audit_table(keys, "")
        + _INDEXES_AND_TRIGGER
        + """
INSERT INTO occ.audit_events OVERRIDING SYSTEM VALUE SELECT * FROM occ.audit_events_partitioned;
DROP TABLE occ.audit_events_partitioned;
DROP FUNCTION occ.ensure_audit_partitions(timestamptz, integer);
DROP TABLE occ.audit_exports;
"""
    )
    steps.grant_to_app_role("GRANT SELECT, INSERT ON occ.audit_events TO occ_app")
