"""The migration revision a database is at: Alembic's version table, as the app role sees it.

Takes the caller's session and never commits.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.state import db

_NOT_READABLE: Final = frozenset({"42P01", "3F000", "42501"})
"""SQLSTATEs of a version table that is missing (no migration yet: undefined table or schema)
or not readable (before the migration that grants it to the app role)."""


def applied(session: orm.Session) -> str | None:
    """The revision the last migration recorded; ``None`` before any migration (no table), or
    before the one that lets the app role read it.

    A ``None`` aborts the session's transaction: read nothing else in it.
    """
    try:
        return session.execute(sa.text("SELECT version_num FROM occ.alembic_version")).scalar()
    except sa_exc.ProgrammingError as exc:
        if db.sqlstate(exc) in _NOT_READABLE:
            return None
        raise
