"""Cheaper checks on ``controller_work``: the same rows are rejected, fewer checks per UPDATE.

PostgreSQL evaluates every CHECK constraint of a table on every UPDATE, whatever columns it
sets; each queue transition paid for the id-shape regular expressions and for
``occ.work_result_is_valid``. Now:

* the id, shape and owner checks (``controller_work_id_length``, ``controller_work_shape``,
  ``controller_work_owner_format``) cover columns frozen at enqueue: a trigger runs them on
  INSERT and on an UPDATE that sets one of those columns (the application role may not);
* the result check (``controller_work_result_data_state``) runs from a trigger only when
  ``result_data`` is not NULL (most rows carry none).

A rejected row still fails with SQLSTATE 23514 (check_violation), the constraint's name and
the message PostgreSQL writes for a CHECK. The cheap state checks stay CHECK constraints.
"""

from __future__ import annotations

from collections.abc import Callable

from alembic import op

from occ.state import schema_steps as steps

revision = "0009"
down_revision = "0008"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def _id(prefix: str, column: str) -> str:
    return f"{column} ~ '^{prefix}_{UUID4}$'"


def _shape(row: str) -> str:
    """The shape CHECK of migration 0002, its columns read from ``row`` (``NEW.`` or none)."""
    return f"""
  CASE {row}kind
    WHEN 'namespace_ready' THEN
      {row}agent_id IS NULL AND {row}revision_id IS NULL AND {row}agent_target IS NULL
      AND {row}namespace_target = 'ready'
      AND {row}id = 'namespace:' || {row}namespace_id || ':reconcile:ready'
    WHEN 'namespace_deleted' THEN
      {row}agent_id IS NULL AND {row}revision_id IS NULL AND {row}agent_target IS NULL
      AND {row}namespace_target = 'deleted'
      AND {row}id = 'namespace:' || {row}namespace_id || ':reconcile:deleted'
    WHEN 'agent_stopped' THEN
      {row}agent_id IS NOT NULL AND {row}revision_id IS NULL AND {row}namespace_target IS NULL
      AND {row}agent_target = 'stopped'
      AND {row}id ~ ('^agent:' || {row}agent_id || ':reconcile:stopped:{UUID4}$')
    WHEN 'agent_deleted' THEN
      {row}agent_id IS NOT NULL AND {row}revision_id IS NULL AND {row}namespace_target IS NULL
      AND {row}agent_target = 'deleted'
      AND {row}id = 'agent:' || {row}agent_id || ':reconcile:deleted'
    WHEN 'revision_reconcile' THEN
      {row}agent_id IS NOT NULL AND {row}revision_id IS NOT NULL
      AND {row}namespace_target IS NULL AND {row}agent_target IS NULL
      AND {row}id = 'agent_revision:' || {row}revision_id || ':reconcile'
    WHEN 'revision_maintenance' THEN
      {row}agent_id IS NOT NULL AND {row}revision_id IS NOT NULL
      AND {row}namespace_target IS NULL AND {row}agent_target IS NULL
      AND {row}id ~ ('^agent_revision:' || {row}revision_id || ':maintenance:[0-9]{{1,15}}$')
    ELSE false
  END"""


def _owner(row: str) -> str:
    return (
        f"{_id('ns', row + 'namespace_id')}"
        f" AND ({row}agent_id IS NULL OR {_id('agt', row + 'agent_id')})"
        f" AND ({row}revision_id IS NULL OR {_id('rev', row + 'revision_id')})"
        f" AND {_id('prn', row + 'actor_id')}"
    )


def _length(row: str) -> str:
    return f"char_length({row}id) BETWEEN 1 AND 512"


def _result(row: str) -> str:
    return (
        f"{row}result_data IS NULL"
        f" OR occ.work_result_is_valid({row}state, {row}reason_code, {row}result_data)"
    )


Check = tuple[str, Callable[[str], str]]
"""A constraint's name and its expression over a row prefix."""

_RESULT: Check = ("controller_work_result_data_state", _result)
_FROZEN: tuple[Check, ...] = (
    ("controller_work_id_length", _length),
    ("controller_work_shape", _shape),
    ("controller_work_owner_format", _owner),
)
_FROZEN_COLUMNS = (
    "id, kind, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target"
)

_REJECT = """
CREATE FUNCTION occ.reject_work_row(constraint_name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'new row for relation "controller_work" violates check constraint "%"',
    constraint_name
    USING ERRCODE = 'check_violation', SCHEMA = 'occ', TABLE = 'controller_work',
          CONSTRAINT = constraint_name;
END $$;
"""


def _checks_function(name: str, checks: tuple[Check, ...]) -> str:
    body = "".join(
        f"  IF NOT ({check('NEW.')}) THEN\n    PERFORM occ.reject_work_row('{constraint}');\n"
        "  END IF;\n"
        for constraint, check in checks
    )
    return (
        f"CREATE FUNCTION occ.{name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}  RETURN NEW;\nEND $$;\n"
    )


def upgrade() -> None:
    steps.execute(_REJECT)
    steps.execute(_checks_function("controller_work_check_owner", _FROZEN))
    steps.execute(_checks_function("controller_work_check_result", (_RESULT,)))
    op.execute(
        "CREATE TRIGGER controller_work_owner_checks"
        f" BEFORE INSERT OR UPDATE OF {_FROZEN_COLUMNS} ON occ.controller_work"
        " FOR EACH ROW EXECUTE FUNCTION occ.controller_work_check_owner()"
    )
    op.execute(
        "CREATE TRIGGER controller_work_result_check"
        " BEFORE INSERT OR UPDATE ON occ.controller_work"
        " FOR EACH ROW WHEN (NEW.result_data IS NOT NULL)"
        " EXECUTE FUNCTION occ.controller_work_check_result()"
    )
    for constraint, _ in (*_FROZEN, _RESULT):
        op.execute(f"ALTER TABLE occ.controller_work DROP CONSTRAINT {constraint}")


def downgrade() -> None:
    for constraint, check in (*_FROZEN, _RESULT):
        steps.execute(
            f"ALTER TABLE occ.controller_work ADD CONSTRAINT {constraint} CHECK ({check('')})"
        )
    op.execute("DROP TRIGGER controller_work_result_check ON occ.controller_work")
    op.execute("DROP TRIGGER controller_work_owner_checks ON occ.controller_work")
    op.execute("DROP FUNCTION occ.controller_work_check_result()")
    op.execute("DROP FUNCTION occ.controller_work_check_owner()")
    op.execute("DROP FUNCTION occ.reject_work_row(text)")
