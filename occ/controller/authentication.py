"""Authentication: turn a presented API key into the principal it belongs to."""

from __future__ import annotations

from occ import errors
from occ.db import Database
from occ.state import api_keys, iam_policy


def authenticate(db: Database, *, presented_key: str, pepper: str) -> str:
    """The id of the live principal whose live key this is.

    Raises:
        Unauthenticated: malformed, unknown, revoked, or its principal is disabled.
    """
    with db.transaction() as session:
        key = api_keys.verify(session, presented=presented_key, pepper=pepper)
        if key is None:
            raise errors.Unauthenticated("the API key is invalid or revoked")
        principal = iam_policy.get_principal(session, key.principal_id)
        if principal is None or principal.disabled_at is not None:
            raise errors.Unauthenticated("the API key's principal is disabled")
        api_keys.touch(session, key.id)
        return principal.id
