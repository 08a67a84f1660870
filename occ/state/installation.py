"""The Installation singleton row: create it once, read it.

Takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import ids
from occ.state import models, rows

_INSTALLATION: Final = cast(sa.Table, models.Installation.__table__)


@dataclass(frozen=True, kw_only=True)
class Installation:
    """The one Installation every Namespace and IAM row belongs to."""

    id: str
    name: str
    created_at: dt.datetime


_VALUES: Final = rows.Values(_INSTALLATION, Installation)


def insert(session: orm.Session, *, name: str) -> Installation | None:
    """Create the Installation; ``None`` when one already exists (the singleton key holds)."""
    statement = _VALUES.insert(id=ids.new("installation"), name=name).on_conflict_do_nothing()
    return _VALUES.returned(session, statement)


def current(session: orm.Session) -> Installation | None:
    """The Installation, or ``None`` before bootstrap."""
    return _VALUES.find(session)
