"""Idempotency records: claim a key for a request, complete it with the answer, or release it.

A claim is one row per (principal, route, key) holding the request's fingerprint; completing
stores the successful answer so a repeat replays it. Takes the caller's session and never
commits; knows nothing of HTTP beyond the numbers and JSON it stores.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state import models

RETENTION: Final = dt.timedelta(hours=24)
"""A record older than this is no longer honoured: the key may be used afresh."""
ABANDONED_AFTER: Final = dt.timedelta(seconds=60)
"""A claim without an answer this old belongs to a request that died: it may be taken over."""

_TABLE: Final = cast(sa.Table, models.IdempotencyKey.__table__)
_NOW: Final = sa.func.clock_timestamp()


@dataclass(frozen=True, kw_only=True)
class Record:
    """What a key already holds: the request's fingerprint and, once answered, the answer."""

    fingerprint: str
    response_status: int | None
    response_body: Any
    response_location: str | None


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Whose key for which route."""

    principal_id: str
    route: str
    key: str

    def where(self) -> sa.ColumnElement[bool]:
        return sa.and_(
            _TABLE.c.principal_id == self.principal_id,
            _TABLE.c.route == self.route,
            _TABLE.c.key == self.key,
        )


def claim(session: orm.Session, scope: Scope, fingerprint: str) -> Record | None:
    """Claim the key for a new request (``None``), or the record that already holds it.

    An expired record or an abandoned claim is taken over (``None`` as well).
    """
    while True:  # a concurrent release may remove the row between the statements: claim again
        if _insert(session, scope, fingerprint) or _take_over(session, scope, fingerprint):
            return None
        row = session.execute(
            sa.select(
                _TABLE.c.fingerprint,
                _TABLE.c.response_status,
                _TABLE.c.response_body,
                _TABLE.c.response_location,
            ).where(scope.where())
        ).first()
        if row is not None:
            return Record(
                fingerprint=row.fingerprint,
                response_status=row.response_status,
                response_body=row.response_body,
                response_location=row.response_location,
            )


def _insert(session: orm.Session, scope: Scope, fingerprint: str) -> bool:
    statement = (
        pg.insert(_TABLE)
        .values(
            principal_id=scope.principal_id,
            route=scope.route,
            key=scope.key,
            fingerprint=fingerprint,
        )
        .on_conflict_do_nothing()
        .returning(_TABLE.c.key)
    )
    return session.execute(statement).first() is not None


def _take_over(session: orm.Session, scope: Scope, fingerprint: str) -> bool:
    statement = (
        sa.update(_TABLE)
        .where(
            scope.where(),
            sa.or_(
                _TABLE.c.created_at < _NOW - RETENTION,
                sa.and_(
                    _TABLE.c.response_status.is_(None),
                    _TABLE.c.created_at < _NOW - ABANDONED_AFTER,
                ),
            ),
        )
        .values(
            fingerprint=fingerprint,
            response_status=None,
            response_body=sa.null(),  # SQL NULL: a Python None would be stored as JSON null
            response_location=None,
            created_at=_NOW,
        )
        .returning(_TABLE.c.key)
    )
    return session.execute(statement).first() is not None


def complete(
    session: orm.Session, scope: Scope, *, status: int, body: Any, location: str | None
) -> None:
    """Store the successful answer of the claimed request."""
    session.execute(
        sa.update(_TABLE)
        .where(scope.where(), _TABLE.c.response_status.is_(None))
        .values(response_status=status, response_body=body, response_location=location)
    )


def release(session: orm.Session, scope: Scope) -> None:
    """Give the key back after a request that changed nothing (it failed)."""
    session.execute(sa.delete(_TABLE).where(scope.where(), _TABLE.c.response_status.is_(None)))
