"""The Installation singleton row: create it once, read it.

Takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ import ids
from occ.state import models, rows

_INSTALLATION: Final = cast(sa.Table, models.Installation.__table__)


@dataclass(frozen=True, kw_only=True)
class Installation:
    """The one Installation every Namespace and IAM row belongs to."""

    id: str
    name: str
    created_at: dt.datetime


def insert(session: orm.Session, *, name: str) -> Installation | None:
    """Create the Installation; ``None`` when one already exists (the singleton key holds)."""
    row = (
        session.execute(
            pg.insert(_INSTALLATION)
            .values(id=ids.new("installation"), name=name)
            .on_conflict_do_nothing()
            .returning(*_INSTALLATION.c)
        )
        .mappings()
        .first()
    )
    return None if row is None else _installation(row)


def current(session: orm.Session) -> Installation | None:
    """The Installation, or ``None`` before bootstrap."""
    row = session.execute(sa.select(_INSTALLATION)).mappings().first()
    return None if row is None else _installation(row)


def _installation(row: sa.RowMapping) -> Installation:
    return rows.record(Installation, row)
