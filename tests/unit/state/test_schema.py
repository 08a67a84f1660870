"""Which migration revisions count as this code's schema, and which as a newer release's (no
database needed)."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory

from occ.state import schema


def test_only_the_head_is_current() -> None:
    scripts = ScriptDirectory.from_config(Config(str(schema.ALEMBIC_INI)))
    head = scripts.get_current_head()
    assert schema.is_current(head)
    older = [script.revision for script in scripts.walk_revisions() if script.revision != head]
    assert older and not any(schema.is_current(revision) for revision in older)
    assert not schema.is_current(None)


def test_a_revision_unknown_to_this_code_is_a_newer_release_s_not_current() -> None:
    """A newer release migrated first: this one must refuse it, not serve it."""
    assert not schema.is_current("9999_from_a_newer_release")
    assert schema.is_newer("9999_from_a_newer_release")
    scripts = ScriptDirectory.from_config(Config(str(schema.ALEMBIC_INI)))
    assert not any(schema.is_newer(script.revision) for script in scripts.walk_revisions())
    assert not schema.is_newer(None)
