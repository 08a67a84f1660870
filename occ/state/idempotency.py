"""Idempotency records: reserve a key inside the change's transaction, find it, answer it.

One row per (principal, route, key) holding the request's fingerprint. The row is written
by the transaction that makes the change, so it exists exactly when the change committed;
completing it stores the successful answer so a repeat replays it. Takes the caller's
session and never commits; knows nothing of HTTP beyond the numbers and JSON it stores.
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
"""A record without an answer this old lost its answer (the request died after its commit);
younger, the answer is still being stored."""

_TABLE: Final = cast(sa.Table, models.IdempotencyKey.__table__)
_NOW: Final = sa.func.clock_timestamp()


@dataclass(frozen=True, kw_only=True)
class Record:
    """What a key already holds: the request's fingerprint and, once answered, the answer."""

    fingerprint: str
    response_status: int | None
    response_body: Any
    response_location: str | None
    abandoned: bool
    """No answer, and none is coming any more."""


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


def reserve(session: orm.Session, scope: Scope, fingerprint: str) -> bool:
    """Write the key's record for the change this transaction makes; ``False`` when another
    request holds it (a concurrent one waits here until the holder's transaction ended).

    An expired record is taken over; one the prune deleted while the take-over waited for it
    leaves the key free, which a second insert takes.
    """
    return (
        _insert(session, scope, fingerprint)
        or _take_over(session, scope, fingerprint)
        or _insert(session, scope, fingerprint)
    )


def find(session: orm.Session, scope: Scope) -> Record | None:
    """The key's record unless it expired."""
    row = session.execute(
        sa.select(
            _TABLE.c.fingerprint,
            _TABLE.c.response_status,
            _TABLE.c.response_body,
            _TABLE.c.response_location,
            (_TABLE.c.created_at < _NOW - ABANDONED_AFTER).label("old"),
        ).where(scope.where(), _TABLE.c.created_at >= _NOW - RETENTION)
    ).first()
    if row is None:
        return None
    return Record(
        fingerprint=row.fingerprint,
        response_status=row.response_status,
        response_body=row.response_body,
        response_location=row.response_location,
        abandoned=row.response_status is None and bool(row.old),
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
        .where(scope.where(), _TABLE.c.created_at < _NOW - RETENTION)
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
