"""Sessions blocked on a lock: for the tests that act once a racing transaction waits on a
row another connection holds."""

from __future__ import annotations

import sqlalchemy as sa

from occ.state.db import Database

_WAITERS = sa.text(
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
    "AND datname = current_database()"
)


def waiters(db: Database) -> int:
    """How many sessions of ``db``'s database wait on a lock (as ``db``'s role sees them)."""
    with db.transaction() as session:
        return int(session.execute(_WAITERS).scalar_one())
