"""Identities: which principal an identity provider's (issuer, subject) pair signs in as.

A pair is linked to one principal for good (never re-pointed by an e-mail address or a name);
takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models, rows

_IDENTITIES: Final = cast(sa.Table, models.PrincipalIdentity.__table__)


@dataclass(frozen=True, kw_only=True)
class Identity:
    """One linked (issuer, subject) pair."""

    issuer: str
    subject: str
    principal_id: str
    created_at: dt.datetime


_VALUES: Final = rows.Values(_IDENTITIES, Identity)


def find(session: orm.Session, *, issuer: str, subject: str) -> Identity | None:
    """The link of this pair, or ``None``."""
    return _VALUES.find(session, _IDENTITIES.c.issuer == issuer, _IDENTITIES.c.subject == subject)


def link(session: orm.Session, *, issuer: str, subject: str, principal_id: str) -> Identity | None:
    """Link the pair to the principal; ``None`` when another transaction linked it first."""
    statement = _VALUES.insert(
        issuer=issuer, subject=subject, principal_id=principal_id
    ).on_conflict_do_nothing(index_elements=["issuer", "subject"])
    return _VALUES.returned(session, statement)


def list_for(session: orm.Session, principal_id: str) -> list[Identity]:
    """The principal's identities, oldest first."""
    query = _VALUES.select(_IDENTITIES.c.principal_id == principal_id).order_by(
        _IDENTITIES.c.created_at, _IDENTITIES.c.issuer, _IDENTITIES.c.subject
    )
    return rows.every(session, query, _VALUES.make)
