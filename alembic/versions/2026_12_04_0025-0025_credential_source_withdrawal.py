"""Credential-source withdrawal: a work kind of its own that stops an Agent whose managed
account its Backend withdrew.

* ``credential_source_withdrawal`` items, ``agent:<agent id>:withdrawal:<account id>``, carry
  ``agent_target = 'stopped'``: the owner-checks trigger function learns their shape.
* ``occ.work_priority`` gives them the user-intent class (4), like a stop.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0025"
down_revision = "0024"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def _id(prefix: str, column: str) -> str:
    return f"{column} ~ '^{prefix}_{UUID4}$'"


_KIND_SHAPES_0009: tuple[tuple[str, str], ...] = (
    (
        "namespace_ready",
        """{row}agent_id IS NULL AND {row}revision_id IS NULL AND {row}agent_target IS NULL
      AND {row}namespace_target = 'ready'
      AND {row}id = 'namespace:' || {row}namespace_id || ':reconcile:ready'""",
    ),
    (
        "namespace_deleted",
        """{row}agent_id IS NULL AND {row}revision_id IS NULL AND {row}agent_target IS NULL
      AND {row}namespace_target = 'deleted'
      AND {row}id = 'namespace:' || {row}namespace_id || ':reconcile:deleted'""",
    ),
    (
        "agent_stopped",
        """{row}agent_id IS NOT NULL AND {row}revision_id IS NULL AND {row}namespace_target IS NULL
      AND {row}agent_target = 'stopped'
      AND {row}id ~ ('^agent:' || {row}agent_id || ':reconcile:stopped:{uuid4}$')""",
    ),
    (
        "agent_deleted",
        """{row}agent_id IS NOT NULL AND {row}revision_id IS NULL AND {row}namespace_target IS NULL
      AND {row}agent_target = 'deleted'
      AND {row}id = 'agent:' || {row}agent_id || ':reconcile:deleted'""",
    ),
    (
        "revision_reconcile",
        """{row}agent_id IS NOT NULL AND {row}revision_id IS NOT NULL
      AND {row}namespace_target IS NULL AND {row}agent_target IS NULL
      AND {row}id = 'agent_revision:' || {row}revision_id || ':reconcile'""",
    ),
    (
        "revision_maintenance",
        """{row}agent_id IS NOT NULL AND {row}revision_id IS NOT NULL
      AND {row}namespace_target IS NULL AND {row}agent_target IS NULL
      AND {row}id ~ ('^agent_revision:' || {row}revision_id || ':maintenance:[0-9]{{1,15}}$')""",
    ),
)
"""Each work kind's shape as migration 0009 checks it, in its order (``{row}``: the column
prefix)."""

_WITHDRAWAL_SHAPE = (
    "credential_source_withdrawal",
    """{row}agent_id IS NOT NULL AND {row}revision_id IS NULL AND {row}namespace_target IS NULL
      AND {row}agent_target = 'stopped'
      AND {row}id ~ ('^agent:' || {row}agent_id || ':withdrawal:acc_{uuid4}$')""",
)
_WITH_WITHDRAWAL = (*_KIND_SHAPES_0009[:4], _WITHDRAWAL_SHAPE, *_KIND_SHAPES_0009[4:])


def _shape(row: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """The shape check over ``kinds`` (name, condition), its columns read from ``row``."""
    cases = "".join(
        f"    WHEN '{kind}' THEN\n      {condition.format(row=row, uuid4=UUID4)}\n"
        for kind, condition in kinds
    )
    return f"\n  CASE {row}kind\n{cases}    ELSE false\n  END"


def _owner(row: str) -> str:
    return (
        f"{_id('ns', row + 'namespace_id')}"
        f" AND ({row}agent_id IS NULL OR {_id('agt', row + 'agent_id')})"
        f" AND ({row}revision_id IS NULL OR {_id('rev', row + 'revision_id')})"
        f" AND {_id('prn', row + 'actor_id')}"
    )


def _length(row: str) -> str:
    return f"char_length({row}id) BETWEEN 1 AND 512"


def _checks(shape: str) -> str:
    body = "".join(
        f"  IF NOT ({check}) THEN\n    PERFORM occ.reject_work_row('{constraint}');\n  END IF;\n"
        for constraint, check in (
            ("controller_work_id_length", _length("NEW.")),
            ("controller_work_shape", shape),
            ("controller_work_owner_format", _owner("NEW.")),
        )
    )
    return (
        "CREATE OR REPLACE FUNCTION occ.controller_work_check_owner() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$\nBEGIN\n{body}  RETURN NEW;\nEND $$;\n"
    )


def _priority(withdrawal: bool) -> str:
    line = "    WHEN 'credential_source_withdrawal' THEN 4\n" if withdrawal else ""
    return f"""
CREATE OR REPLACE FUNCTION occ.work_priority(p_kind text) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CAST(CASE p_kind
    WHEN 'namespace_ready' THEN 4
    WHEN 'namespace_deleted' THEN 4
    WHEN 'agent_stopped' THEN 4
    WHEN 'agent_deleted' THEN 4
{line}    WHEN 'revision_reconcile' THEN 4
    WHEN 'revision_maintenance' THEN 2
  END AS smallint)
$$;
"""


def upgrade() -> None:
    steps.execute(_checks(_shape("NEW.", _WITH_WITHDRAWAL)))
    steps.execute(_priority(withdrawal=True))


def downgrade() -> None:
    steps.execute("DELETE FROM occ.controller_work WHERE kind = 'credential_source_withdrawal'")
    steps.execute(_priority(withdrawal=False))
    steps.execute(_checks(_shape("NEW.", _KIND_SHAPES_0009)))
