"""Authentication: turn a presented API key into the principal it belongs to."""

from __future__ import annotations

from occ.foundation import errors
from occ.state import api_keys
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
            api_keys.touch(connection, found.key.id)
        return found.key.principal_id
