"""The fenced transitions find their row through the primary key, whatever the statistics say.

A fence written with ``state = 'claimed'`` lets the planner read the row through the partial
index of claimed rows (``controller_work_one_claim_per_lane``), scanning every live claim, when
the table's statistics were gathered while few items were claimed. The fence leaves the state
to the token (only a claimed row holds one), so the generic plan of every transition (the one
a prepared statement settles on) reads one row by its id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import hot_statements, publications, starts, values, work_claims, work_queue
from occ.state.db import Database
from tests.support import queue_steps

QUEUED = 2_000
CLAIMED = 200

FENCED = ("start", "renew", "release", "complete", "fail", "retry", "defer")


@pytest.fixture
def admin(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str
) -> Iterator[orm.Session]:
    """The owner's session after statistics taken with nothing claimed, and then ``CLAIMED``
    items claimed, in a transaction whose plans are all generic."""
    with owner_db.transaction() as session:
        queue_steps.fill(session, actor, QUEUED)
    with db.transaction() as session:
        assert len(work_claims.claim(session, policy, limit=CLAIMED)) == CLAIMED
    with owner_db.transaction() as session:
        session.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
        yield session
        session.rollback()


def _generic_plan(session: orm.Session, statement: hot_statements.HotStatement) -> str:
    """EXPLAIN of the statement prepared with positional parameters, all NULL."""
    names: list[str] = []

    def position(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    sql = re.sub(r"%\((\w+)\)s", position, statement.sql).replace("%%", "%")
    session.execute(sa.text(f"PREPARE plan_probe AS {sql}"))
    arguments = ", ".join(["NULL"] * len(names))
    lines = session.execute(sa.text(f"EXPLAIN EXECUTE plan_probe({arguments})")).scalars()
    plan = "\n".join(lines)
    session.execute(sa.text("DEALLOCATE plan_probe"))
    return plan


@pytest.mark.parametrize("name", FENCED)
def test_a_fenced_transition_reads_its_row_by_the_primary_key(
    admin: orm.Session, name: str
) -> None:
    plan = _generic_plan(admin, work_queue.HOT[name])
    assert "controller_work_pkey" in plan
    assert "controller_work_one_claim_per_lane" not in plan


@pytest.mark.parametrize(
    "statement",
    [publications.HOT["complete_namespace_ready"], starts.HOT["start_namespace_work"]],
    ids=lambda statement: statement.name,
)
def test_the_namespace_start_and_publication_read_their_row_by_the_primary_key(
    admin: orm.Session, statement: hot_statements.HotStatement
) -> None:
    plan = _generic_plan(admin, statement)
    assert "controller_work_pkey" in plan
    assert "controller_work_one_claim_per_lane" not in plan


def test_with_the_state_written_into_the_fence_the_planner_scans_the_claimed_rows(
    admin: orm.Session,
) -> None:
    """The control: the hazard the fence avoids is real under these statistics."""
    complete = work_queue.HOT["complete"]
    with_state = hot_statements.HotStatement(
        "complete",
        complete.sql.replace(
            "AND occ.claim_is_live(w", "AND w.state = 'claimed' AND occ.claim_is_live(w"
        ),
    )
    assert with_state.sql != complete.sql
    assert "controller_work_one_claim_per_lane" in _generic_plan(admin, with_state)
