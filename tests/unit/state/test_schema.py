"""Which migration revisions count as this code's schema (no database needed)."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory

from occ.state import schema


def test_the_head_and_revisions_unknown_to_this_code_are_current() -> None:
    scripts = ScriptDirectory.from_config(Config(str(schema.ALEMBIC_INI)))
    head = scripts.get_current_head()
    assert schema.is_current(head)
    # a newer release migrated first: its revision is not among ours
    assert schema.is_current("9999_from_a_newer_release")
    older = [script.revision for script in scripts.walk_revisions() if script.revision != head]
    assert older and not any(schema.is_current(revision) for revision in older)
    assert not schema.is_current(None)
