"""Credentials a principal holds until they are revoked (API keys, user sessions): the
statements their repositories share over a table with ``principal_id`` and ``revoked_at``.

Takes the caller's session and never commits.
"""

from __future__ import annotations

import dataclasses
from typing import Generic

from sqlalchemy import orm

from occ.state import keyset, rows
from occ.state.rows import D


@dataclasses.dataclass(frozen=True)
class Revocable(Generic[D]):
    """A table of revocable credentials whose rows are handed out as ``values``."""

    values: rows.Values[D]

    def get(self, session: orm.Session, row_id: str, *, lock: bool = False) -> D | None:
        """The credential, revoked or not, or ``None``; ``lock`` takes its row lock."""
        return self.values.get(session, row_id, lock=lock)

    def list_for(
        self, session: orm.Session, principal_id: str, window: keyset.Window = keyset.EVERYTHING
    ) -> list[D]:
        """The principal's credentials (revoked ones included), oldest first (those in
        ``window``)."""
        return self.values.window(session, window, self.values.table.c.principal_id == principal_id)

    def revoke(self, session: orm.Session, row_id: str) -> D | None:
        """Revoke a credential (idempotent: keeps the first ``revoked_at``); ``None`` when it is
        missing."""
        return self.values.stamp(session, row_id, "revoked_at")

    def revoke_all_of(self, session: orm.Session, principal_id: str) -> list[str]:
        """Revoke every unrevoked credential of the principal; the ids this revoked, sorted."""
        table = self.values.table
        held = table.c.principal_id == principal_id
        statement = rows.stamped(table, "revoked_at", held).returning(table.c.id)
        return sorted(session.execute(statement).scalars())
