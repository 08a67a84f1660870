"""API keys: minted once, stored only as a keyed hash (HMAC-SHA256 with a server pepper).

A key reads ``occ_<keyId>_<secret>``; the secret is never stored, logged or returned again.
Takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import hot_statements, keyed_hashes, models, revocable, rows

PREFIX: Final = "occ_"
_PRESENTED: Final = keyed_hashes.KeyedHash("api_key", PREFIX, "_")
_KEYS: Final = cast(sa.Table, models.ApiKey.__table__)


@dataclass(frozen=True, kw_only=True)
class ApiKey:
    """Key metadata (never the secret)."""

    id: str
    principal_id: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None
    last_used_at: dt.datetime | None


_VALUES: Final = rows.Values(_KEYS, ApiKey)
"""A key's metadata: every column but its hash (no field names it)."""


@dataclass(frozen=True)
class MintedKey:
    """A new key: ``plaintext`` is shown to its owner once and then forgotten."""

    key: ApiKey
    plaintext: str = field(repr=False)


def mint(session: orm.Session, *, principal_id: str, pepper: str) -> MintedKey:
    """Create a key for a principal."""
    issued = _PRESENTED.issue(pepper)
    key = _VALUES.inserted(
        session, id=issued.id, principal_id=principal_id, secret_hash=issued.hashed
    )
    return MintedKey(key=key, plaintext=issued.presented)


parse: Final = _PRESENTED.parse
"""``(key_id, secret)`` of a well-formed presented key, else ``None``."""


def _proven(
    presented: str, pepper: str, read: Callable[[str], Mapping[Any, Any] | None]
) -> Mapping[Any, Any] | None:
    """The row ``read`` finds for the key id of ``presented`` if it is live and its hash
    matches the presented secret (compared in constant time); ``None`` otherwise."""
    row = _PRESENTED.proven(presented, pepper, read, "secret_hash")
    return None if row is None or row["revoked_at"] is not None else row


def verify(session: orm.Session, *, presented: str, pepper: str) -> ApiKey | None:
    """The live key that ``presented`` proves, compared in constant time; ``None`` otherwise."""
    query = sa.select(*_VALUES.columns, _KEYS.c.secret_hash)
    row = _proven(
        presented,
        pepper,
        lambda key_id: session.execute(query.where(_KEYS.c.id == key_id)).mappings().first(),
    )
    return None if row is None else _VALUES.make(row)


TOUCH_EVERY: Final = dt.timedelta(seconds=60)

# the key, its principal's state and whether its use is due for recording, in one statement
_IDENTIFY = sa.text("""
    SELECT k.id, k.principal_id, k.created_at, k.revoked_at, k.last_used_at, k.secret_hash,
           p.disabled_at IS NOT NULL AS principal_disabled,
           (k.last_used_at IS NULL
            OR k.last_used_at < clock_timestamp() - CAST(:touch_every AS interval)) AS touch_due
      FROM occ.api_keys k JOIN occ.principals p ON p.id = k.principal_id
     WHERE k.id = :key_id""")


def identify(
    target: hot_statements.Target, *, presented: str, pepper: str
) -> keyed_hashes.Identified[ApiKey] | None:
    """Like ``verify`` in one statement (a hot statement: every request runs it), with the
    owner's state and whether to ``touch`` (``last_used_at`` is unset or older than
    ``TOUCH_EVERY``)."""
    row = _proven(
        presented,
        pepper,
        lambda key_id: hot_statements.first(
            target, _HOT["identify"], {"key_id": key_id, "touch_every": TOUCH_EVERY}
        ),
    )
    if row is None:
        return None
    return keyed_hashes.identified(row, _VALUES.make)


_TOUCH = sa.text("""
    UPDATE occ.api_keys SET last_used_at = clock_timestamp()
     WHERE id = :key_id AND revoked_at IS NULL
       AND (last_used_at IS NULL
            OR last_used_at < clock_timestamp() - CAST(:touch_every AS interval))""")


_HOT: Final = hot_statements.compile_all(
    {"identify": _IDENTIFY, "touch": _TOUCH}, "identify", "touch"
)


def touch(target: hot_statements.Target, key_id: str) -> None:
    """Record use of a key (at most once per ``TOUCH_EVERY``, so reads stay cheap)."""
    hot_statements.run(target, _HOT["touch"], {"key_id": key_id, "touch_every": TOUCH_EVERY})


# reading, listing and revoking are those of every revocable credential
_REVOCABLE: Final = revocable.Revocable(_VALUES)
get: Final = _REVOCABLE.get
list_for: Final = _REVOCABLE.list_for
revoke: Final = _REVOCABLE.revoke
revoke_all_of: Final = _REVOCABLE.revoke_all_of
