"""The claim under a deep backlog: a bounded number of lane locks, the same oldest heads."""

from __future__ import annotations

import sqlalchemy as sa

from occ.state import values, work_claims
from occ.state.db import Database
from tests.support import queue_steps

BACKLOG = 100_000
LIMIT = 10

_MY_ADVISORY_LOCKS = sa.text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
)

_OLDEST = sa.text("""
    SELECT id FROM occ.controller_work WHERE state = 'queued'
     ORDER BY available_at, created_at, id LIMIT :limit
""")


def test_a_claim_over_100k_queued_items_takes_at_most_twice_its_limit_in_lane_locks(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    with owner_db.transaction() as session:
        queue_steps.fill(session, actor, BACKLOG)
    with db.transaction() as session:
        expected = session.execute(_OLDEST, {"limit": LIMIT}).scalars().all()

    with db.transaction() as session:
        claims = work_claims.claim(session, policy, limit=LIMIT)
        locks = session.execute(_MY_ADVISORY_LOCKS).scalar_one()

    assert [claim.work_id for claim in claims] == expected  # the oldest heads, in order
    assert locks <= 2 * LIMIT
