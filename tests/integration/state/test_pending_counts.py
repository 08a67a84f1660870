"""The pending counts ``worker.health`` and the queue gauges read cost what is pending, not
what finished: over a table that is mostly history, neither reads it whole (EXPLAIN)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from occ.state import values, work_claims, work_queue, work_reads
from occ.state.db import Database
from tests.support import databases, queue_steps, rows

FINISHED = 20_000

_HISTORY = sa.text("""
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, state, available_at,
       created_at, updated_at, completed_at, reason_code)
    SELECT 'agent_revision:' || :revision || ':maintenance:' || n, 'revision_maintenance',
           :namespace, :agent, :revision, :actor, 'succeeded', clock_timestamp(),
           clock_timestamp(), clock_timestamp(), clock_timestamp(), 'REVISION_ACTIVATED'
      FROM generate_series(1, :count) n
""")


@pytest.fixture
def history(
    db: Database,
    owner_db: Database,
    policy: values.QueuePolicy,
    actor: str,
    namespace_id: str,
) -> None:
    """``FINISHED`` succeeded items, 200 queued and 20 claimed, vacuumed and analysed."""
    with owner_db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id, name="history")
        revision_id = rows.revision(
            session, namespace_id=namespace_id, agent_id=agent_id, actor_id=actor, number=1
        )
        session.execute(
            _HISTORY,
            {
                "revision": revision_id,
                "namespace": namespace_id,
                "agent": agent_id,
                "actor": actor,
                "count": FINISHED,
            },
        )
        queue_steps.fill(session, actor, 200)
    with db.transaction() as session:
        assert len(work_claims.claim(session, policy, limit=20)) == 20
    with owner_db.autocommit_connection() as connection:
        databases.psycopg_of(connection).execute("VACUUM ANALYZE occ.controller_work")


def _plan(db: Database, statement: str) -> str:
    with db.snapshot() as session:
        return "\n".join(session.execute(sa.text(f"EXPLAIN {statement}")).scalars())


_OLD_COUNT = "SELECT count(*) FROM occ.controller_work WHERE state IN ('queued', 'claimed')"


@pytest.mark.usefixtures("history")
def test_the_health_count_and_the_backlog_gauge_read_the_pending_rows_on_their_indexes(
    db: Database,
) -> None:
    assert "Seq Scan" in _plan(db, _OLD_COUNT)  # what a count over both states would do
    count_plan = _plan(db, work_queue.SQL["pending"].text)
    with db.snapshot() as session:
        compiled = work_reads.BACKLOG.compile(
            session.get_bind(), compile_kwargs={"literal_binds": True}
        )
    backlog_plan = _plan(db, str(compiled))

    for plan in (count_plan, backlog_plan):
        assert "Seq Scan" not in plan, plan
        assert "controller_work_ready" in plan, plan
        assert "controller_work_one_claim_per_lane" in plan, plan
    with db.snapshot() as session:
        assert work_queue.pending(session) == 200  # 180 queued, 20 claimed
        backlog = work_reads.backlog(session)
    assert backlog.pending == 200 and backlog.oldest_age_s > 0
