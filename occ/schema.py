"""Schema migrations: run Alembic from code (``occ db upgrade``, tests, benchmarks).

Runs with the owner connection; never used by the API or workers at run time.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

ALEMBIC_INI = Path(__file__).resolve().parent.parent / "alembic.ini"


def _config(url: str) -> Config:
    if not ALEMBIC_INI.exists():
        raise FileNotFoundError(f"alembic.ini not found next to the occ package ({ALEMBIC_INI})")
    config = Config(str(ALEMBIC_INI))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` (an owner connection) to ``revision``."""
    command.upgrade(_config(url), revision)


def check(url: str) -> None:
    """Fail if the models and the migrated database disagree (``alembic check``)."""
    command.check(_config(url))


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``base`` removes the schema)."""
    command.downgrade(_config(url), revision)
