"""Authentication: turn a presented API key, or a user session's token, into the principal it
belongs to."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from occ.foundation import errors
from occ.state import api_keys, user_sessions
from occ.state.db import Database


def authenticate(db: Database, *, presented_key: str, pepper: str) -> str:
    """The id of the live principal whose live key this is.

    One statement on an autocommit connection, outside any transaction (the request's use
    case opens the only one); a second, the ``last_used_at`` update, at most once a minute
    per key.

    Raises:
        Unauthenticated: malformed, unknown, revoked, or its principal is disabled.
    """
    with db.autocommit_connection() as connection:
        found = api_keys.identify(connection, presented=presented_key, pepper=pepper)
        if found is None:
            raise errors.Unauthenticated("the API key is invalid or revoked")
        if found.principal_disabled:
            raise errors.Unauthenticated("the API key's principal is disabled")
        if found.touch_due:
            api_keys.touch(connection, found.credential.id)
        return found.credential.principal_id


@dataclass(frozen=True, kw_only=True)
class SignedIn:
    """The principal a session cookie authenticates, and the session's id (what the CSRF
    token is bound to)."""

    principal_id: str
    session_id: str


def authenticate_session(
    db: Database, *, presented_token: str, secret_key: str, idle: dt.timedelta, cli: bool = False
) -> SignedIn:
    """The principal of the live session ``presented_token`` proves (like ``authenticate``:
    one statement outside any transaction, a second at most once a minute to restart the idle
    timeout). A cookie (``cli`` false) carries a browser's session, a Bearer token (``cli``)
    a CLI token: each is refused the other's.

    Raises:
        Unauthenticated: malformed, unknown, revoked, expired (absolute or idle), not of the
            kind presented, or its principal is disabled.
    """
    with db.autocommit_connection() as connection:
        found = user_sessions.identify(
            connection, presented=presented_token, secret_key=secret_key, idle=idle
        )
        issuer = None if found is None else found.credential.issuer
        if found is None or (
            issuer != user_sessions.CLI_ISSUER if cli else issuer in user_sessions.COOKIE_REFUSED
        ):
            raise errors.Unauthenticated("the session has ended; sign in again")
        if found.principal_disabled:
            raise errors.Unauthenticated("the session's principal is disabled")
        if found.touch_due:
            user_sessions.touch(connection, found.credential.id)
        return SignedIn(principal_id=found.credential.principal_id, session_id=found.credential.id)
