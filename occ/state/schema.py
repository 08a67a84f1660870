"""Schema migrations: run Alembic from code (``occ db upgrade``, tests, benchmarks).

Runs with the owner connection; never used by the API or workers at run time.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import exc as sa_exc

from occ.foundation import errors

ALEMBIC_INI = Path(__file__).resolve().parents[2] / "alembic.ini"


def _config(url: str) -> Config:
    if not ALEMBIC_INI.exists():
        raise FileNotFoundError(f"alembic.ini not found next to the occ package ({ALEMBIC_INI})")
    config = Config(str(ALEMBIC_INI))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` (an owner connection) to ``revision``.

    Raises:
        DependencyUnavailable: the database cannot be reached.
    """
    with _reachable():
        command.upgrade(_config(url), revision)


def check(url: str) -> None:
    """Fail if the models and the migrated database disagree (``alembic check``).

    Raises:
        DependencyUnavailable: the database cannot be reached.
    """
    with _reachable():
        command.check(_config(url))


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    try:
        yield
    except sa_exc.OperationalError as exc:
        raise errors.DependencyUnavailable(
            f"the database is unavailable: {_driver_message(exc)}"
        ) from exc


def _driver_message(exc: sa_exc.DBAPIError) -> str:
    """The first line of the driver's message, without SQLAlchemy's statement dump."""
    text = str(exc.orig) if exc.orig is not None else str(exc)
    lines = text.strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def is_current(applied: str | None) -> bool:
    """Whether a database at revision ``applied`` has this code's schema (its head)."""
    return applied is not None and applied == _revisions()[0]


def is_newer(applied: str | None) -> bool:
    """Whether a database at revision ``applied`` was migrated by a newer release: a revision
    this code does not know."""
    return applied is not None and applied not in _revisions()[1]


@functools.cache
def _revisions() -> tuple[str | None, frozenset[str]]:
    """This code's head revision and every revision it knows (read once per process)."""
    scripts = ScriptDirectory.from_config(_config(""))
    known = frozenset(script.revision for script in scripts.walk_revisions())
    return scripts.get_current_head(), known


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``base`` removes the schema)."""
    command.downgrade(_config(url), revision)
