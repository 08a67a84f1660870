"""API-key authentication on real PostgreSQL: one statement per request while the key's use
was recorded within the minute, the ``last_used_at`` update once it is older; revoked keys and
disabled principals are refused."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from occ.controller import authentication
from occ.foundation import errors
from occ.state import api_keys
from occ.state.db import Database
from tests.support import rows, statements

PEPPER = "test-pepper"


def mint(db: Database) -> api_keys.MintedKey:
    with db.transaction() as session:
        return api_keys.mint(session, principal_id=rows.principal(session), pepper=PEPPER)


def last_used(db: Database, key_id: str) -> dt.datetime | None:
    with db.transaction() as session:
        key = api_keys.get(session, key_id)
    assert key is not None
    return key.last_used_at


def statements_of(db: Database, presented: str) -> tuple[str, list[str]]:
    with statements.recorded(db) as seen:
        principal_id = authentication.authenticate(db, presented_key=presented, pepper=PEPPER)
    return principal_id, seen


def test_use_is_recorded_at_most_once_a_minute(db: Database) -> None:
    minted = mint(db)
    assert last_used(db, minted.key.id) is None

    principal_id, first = statements_of(db, minted.plaintext)
    assert principal_id == minted.key.principal_id
    assert len(first) == 2  # identify, then the due last_used_at update
    recorded = last_used(db, minted.key.id)
    assert recorded is not None

    _, second = statements_of(db, minted.plaintext)
    assert len(second) == 1  # fresh: no update
    assert last_used(db, minted.key.id) == recorded

    with db.transaction() as session:
        session.execute(
            sa.text("UPDATE occ.api_keys SET last_used_at = :at WHERE id = :id"),
            {"at": recorded - dt.timedelta(minutes=2), "id": minted.key.id},
        )
    _, third = statements_of(db, minted.plaintext)
    assert len(third) == 2
    again = last_used(db, minted.key.id)
    assert again is not None and again > recorded


def test_bad_revoked_and_disabled_keys_are_refused(db: Database) -> None:
    minted = mint(db)
    with pytest.raises(errors.Unauthenticated):
        authentication.authenticate(db, presented_key=minted.plaintext + "0", pepper=PEPPER)
    with pytest.raises(errors.Unauthenticated):
        authentication.authenticate(db, presented_key=minted.plaintext, pepper="other-pepper")

    with db.transaction() as session:
        session.execute(
            sa.text("UPDATE occ.principals SET disabled_at = clock_timestamp() WHERE id = :id"),
            {"id": minted.key.principal_id},
        )
    with pytest.raises(errors.Unauthenticated, match="disabled"):
        authentication.authenticate(db, presented_key=minted.plaintext, pepper=PEPPER)

    other = mint(db)
    with db.transaction() as session:
        api_keys.revoke(session, other.key.id)
    with pytest.raises(errors.Unauthenticated, match="invalid or revoked"):
        authentication.authenticate(db, presented_key=other.plaintext, pepper=PEPPER)
    assert last_used(db, other.key.id) is None
