"""Which principals can still authenticate, by any means: what the last-administrator guard
counts (``occ.controller.policy.keep_an_administrator``).

Takes the caller's session and never commits; the statement is in ``sql/sign_in_means.sql``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from sqlalchemy import orm

from occ.state import queries

SQL: Final = queries.load("sign_in_means.sql")


def able_to_sign_in(session: orm.Session, principal_ids: Collection[str]) -> set[str]:
    """Which of these principals are enabled and hold a live API key, a linked sign-in
    identity, or a live user session or CLI token."""
    if not principal_ids:
        return set()
    found = session.execute(SQL["able_to_sign_in"], {"principal_ids": list(principal_ids)})
    return set(found.scalars())
