"""User sessions: one row per sign-in, the token stored only as a keyed hash.

A token reads ``<sessionId>.<secret>`` (the cookie's value); the hash is HMAC-SHA256 keyed
with ``OCC_AUTH_SECRET``, so a database read alone cannot forge a cookie. A session is live
while it is not revoked, before ``expires_at`` (the absolute timeout) and while
``last_seen_at`` is within the idle timeout; use moves ``last_seen_at`` at most once a minute.
Takes the caller's session (or an autocommit connection for the per-request read) and never
commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import hot_statements, keyed_hashes, models, revocable, rows

_PRESENTED: Final = keyed_hashes.KeyedHash("user_session", "", ".")
_SESSIONS: Final = cast(sa.Table, models.UserSession.__table__)
TOUCH_EVERY: Final = dt.timedelta(seconds=60)
ONE_TIME_ISSUER: Final = "occ:one-time-link"
"""The issuer of a one-time sign-in link's row: it authenticates nothing until redeemed."""
LINK_ISSUER: Final = "occ:link"
"""The issuer of a session a one-time sign-in link started."""
CLI_CODE_ISSUER: Final = "occ:cli-code"
"""The issuer of the row behind a CLI sign-in's one-time code: it authenticates nothing until
``occ login --browser`` trades it (with its PKCE verifier) for a CLI token."""
CLI_ISSUER: Final = "occ:cli"
"""The issuer of a CLI token: a session the CLI presents as a Bearer token, never a cookie."""
COOKIE_REFUSED: Final = frozenset({ONE_TIME_ISSUER, CLI_CODE_ISSUER, CLI_ISSUER})
"""Issuers whose tokens a session cookie never carries."""


@dataclass(frozen=True, kw_only=True)
class UserSession:
    """A session's metadata (never its token)."""

    id: str
    principal_id: str
    issuer: str
    created_at: dt.datetime
    last_seen_at: dt.datetime
    expires_at: dt.datetime
    revoked_at: dt.datetime | None


_VALUES: Final = rows.Values(_SESSIONS, UserSession)


@dataclass(frozen=True)
class StartedSession:
    """A new session: ``token`` goes into the cookie once and is then forgotten."""

    session: UserSession
    token: str = field(repr=False)


parse: Final = _PRESENTED.parse
"""``(session_id, secret)`` of a well-formed token, else ``None``."""


def start(
    session: orm.Session,
    *,
    principal_id: str,
    issuer: str,
    secret_key: str,
    lifetime: dt.timedelta,
) -> StartedSession:
    """A new session of the principal, ending for good ``lifetime`` from now."""
    issued = _PRESENTED.issue(secret_key)
    started = _VALUES.inserted(
        session,
        id=issued.id,
        principal_id=principal_id,
        issuer=issuer,
        token_hash=issued.hashed,
        expires_at=sa.func.clock_timestamp() + lifetime,
    )
    return StartedSession(session=started, token=issued.presented)


# the session, its principal's state, whether it is live and whether use is due for recording
_IDENTIFY = sa.text("""
    SELECT s.id, s.principal_id, s.issuer, s.created_at, s.last_seen_at, s.expires_at,
           s.revoked_at, s.token_hash,
           p.disabled_at IS NOT NULL AS principal_disabled,
           (s.revoked_at IS NULL AND s.expires_at > clock_timestamp()
            AND s.last_seen_at > clock_timestamp() - CAST(:idle AS interval)) AS live,
           s.last_seen_at < clock_timestamp() - CAST(:touch_every AS interval) AS touch_due
      FROM occ.user_sessions s JOIN occ.principals p ON p.id = s.principal_id
     WHERE s.id = :session_id""")

_TOUCH = sa.text("""
    UPDATE occ.user_sessions SET last_seen_at = clock_timestamp()
     WHERE id = :session_id AND revoked_at IS NULL
       AND last_seen_at < clock_timestamp() - CAST(:touch_every AS interval)""")

_HOT: Final = hot_statements.compile_all(
    {"identify": _IDENTIFY, "touch": _TOUCH}, "identify", "touch"
)


def identify(
    target: hot_statements.Target, *, presented: str, secret_key: str, idle: dt.timedelta
) -> keyed_hashes.Identified[UserSession] | None:
    """The live session ``presented`` proves (compared in constant time), else ``None``:
    malformed, unknown, wrong secret, revoked, past its absolute or idle timeout."""
    row = _PRESENTED.proven(
        presented,
        secret_key,
        lambda session_id: hot_statements.first(
            target,
            _HOT["identify"],
            {"session_id": session_id, "idle": idle, "touch_every": TOUCH_EVERY},
        ),
        "token_hash",
    )
    if row is None or not row["live"]:
        return None
    return keyed_hashes.identified(row, _VALUES.make)


def touch(target: hot_statements.Target, session_id: str) -> None:
    """Record use of a session (at most once per ``TOUCH_EVERY``): the idle timeout restarts."""
    hot_statements.run(
        target, _HOT["touch"], {"session_id": session_id, "touch_every": TOUCH_EVERY}
    )


# reading, listing and revoking are those of every revocable credential
_REVOCABLE: Final = revocable.Revocable(_VALUES)
get: Final = _REVOCABLE.get
list_for: Final = _REVOCABLE.list_for
revoke: Final = _REVOCABLE.revoke
revoke_all_of: Final = _REVOCABLE.revoke_all_of
