"""The Installation singleton row."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models


@dataclass(frozen=True, kw_only=True)
class Installation:
    id: str
    name: str
    created_at: dt.datetime


def current(session: orm.Session) -> Installation | None:
    """The Installation, or ``None`` before bootstrap."""
    row = session.scalars(sa.select(models.Installation)).first()
    return (
        None if row is None else Installation(id=row.id, name=row.name, created_at=row.created_at)
    )
