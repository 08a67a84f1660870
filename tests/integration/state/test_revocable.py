"""Revocable credentials: one statement revokes every live one a principal holds, keeping the
first moment of those already revoked, and the lists show revoked ones too."""

from __future__ import annotations

import datetime as dt

from occ.state import api_keys, user_sessions
from occ.state.db import Database
from tests.support import rows

_PEPPER = "p" * 32


def test_revoking_all_of_a_principal_revokes_its_live_keys_only(db: Database) -> None:
    with db.transaction() as session:
        holder, other = rows.principal(session), rows.principal(session)
        keys = [api_keys.mint(session, principal_id=holder, pepper=_PEPPER).key for _ in range(3)]
        kept = api_keys.mint(session, principal_id=other, pepper=_PEPPER).key
        first = api_keys.revoke(session, keys[0].id)
    assert first is not None and first.revoked_at is not None
    with db.transaction() as session:
        revoked = api_keys.revoke_all_of(session, holder)
        again = api_keys.revoke(session, keys[0].id)
        listed = api_keys.list_for(session, holder)
        untouched = api_keys.get(session, kept.id)
    assert revoked == sorted(key.id for key in keys[1:])
    assert again is not None and again.revoked_at == first.revoked_at
    assert sorted(key.id for key in listed) == sorted(key.id for key in keys)
    assert all(key.revoked_at is not None for key in listed)
    assert untouched is not None and untouched.revoked_at is None


def test_sessions_share_the_revocation_of_keys(db: Database) -> None:
    with db.transaction() as session:
        holder = rows.principal(session)
        started = user_sessions.start(
            session,
            principal_id=holder,
            issuer="https://issuer.example",
            secret_key=_PEPPER,
            lifetime=dt.timedelta(hours=1),
        )
    with db.transaction() as session:
        revoked = user_sessions.revoke_all_of(session, holder)
        none_left = user_sessions.revoke_all_of(session, holder)
        found = user_sessions.get(session, started.session.id)
    assert revoked == [started.session.id]
    assert none_left == []
    assert found is not None and found.revoked_at is not None
