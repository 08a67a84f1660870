"""Priority classes: intent ahead of upkeep, each class its weight's share of a batch, room in
the in-flight budget kept for intent, and a claim that reads a bounded window of each class."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from occ.state import values, work_claims, work_keys, work_queue
from occ.state.db import Database
from occ.state.work_keys import Priority, WorkKind
from tests.support import queue_steps, rows

INTENT_LANES = 60
REPAIR_LANES = 30


def _kinds(claims: list[values.Claim]) -> list[WorkKind]:
    return [claim.key.kind for claim in claims]


def _finish(db: Database, policy: values.QueuePolicy, dispatch: values.Claim) -> None:
    with db.transaction() as session:
        run = work_queue.start(session, policy, dispatch)
        assert run is not None
        work_queue.complete(session, run)


def _deploy(db: Database, namespace_id: str, actor: str, name: str = "deployed") -> str:
    """A new Agent's revision with its deployment queued now; the work id."""
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id, name=name)
        return queue_steps.enqueue_revision(session, namespace_id, agent_id, actor, 1)


def test_every_kind_has_the_class_the_database_gives_it(db: Database) -> None:
    with db.transaction() as session:
        given = {
            kind: session.execute(
                sa.text("SELECT occ.work_priority(:kind)"), {"kind": kind}
            ).scalar_one()
            for kind in WorkKind
        }
    assert given == {kind: int(spec.priority) for kind, spec in work_keys.SPECS.items()}


def test_a_deploy_is_claimed_before_an_older_backlog_of_repairs(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=REPAIR_LANES, per_lane=50)
    deploy = _deploy(db, namespace_id, actor)

    with db.transaction() as session:
        claims = work_claims.claim(session, policy, limit=1)

    assert [claim.work_id for claim in claims] == [deploy]


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 6, 7, 12, 30])
def test_under_a_flood_of_intent_repairs_still_get_their_share_of_every_batch(
    db: Database,
    owner_db: Database,
    policy: values.QueuePolicy,
    actor: str,
    namespace_id: str,
    limit: int,
) -> None:
    # the repairs are the oldest items, the intent flood fills more lanes than the batches take
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=REPAIR_LANES, per_lane=1)
        queue_steps.fill(session, actor, INTENT_LANES * 3)

    for _ in range(3):
        with db.transaction() as session:
            kinds = _kinds(work_claims.claim(session, policy, limit=limit))
        repairs = kinds.count(WorkKind.REVISION_MAINTENANCE)
        intent = len(kinds) - repairs
        assert len(kinds) == limit
        # weights 4:2 while both classes wait: a repair at turns 1/2, 2/2, ...; intent at 1/4, ...
        assert repairs >= limit * Priority.REPAIR // (Priority.INTENT + Priority.REPAIR)
        assert intent >= limit * Priority.INTENT // (Priority.INTENT + Priority.REPAIR)
        # the first seat is intent's, so a lone deploy never waits for a batch of upkeep
        assert kinds[0] == WorkKind.NAMESPACE_READY


def test_a_lane_runs_its_intent_before_its_older_repairs(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    with owner_db.transaction() as session:
        (agent_id,) = queue_steps.fill_repairs(session, namespace_id, actor, lanes=1, per_lane=5)
    with db.transaction() as session:
        deploy = queue_steps.enqueue_revision(session, namespace_id, agent_id, actor, 2)

    with db.transaction() as session:
        claims = work_claims.claim(session, policy, limit=5)

    assert [claim.work_id for claim in claims] == [deploy]  # one claim per lane, intent first


def test_upkeep_never_holds_the_whole_budget_so_a_deploy_is_claimed_at_once(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    budget = 8
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=REPAIR_LANES, per_lane=2)

    with db.transaction() as session:
        first = work_claims.claim_share(session, policy, max_in_flight=budget, min_room=2)
    assert len(first.claims) == work_claims.upkeep_budget(budget) == 6
    assert set(_kinds(first.claims)) == {WorkKind.REVISION_MAINTENANCE}
    with db.transaction() as session:  # the reserve is for intent only
        held = work_claims.claim_share(session, policy, max_in_flight=budget, min_room=1)
    assert held.claims == []

    deploy = _deploy(db, namespace_id, actor)
    with db.transaction() as session:
        second = work_claims.claim_share(session, policy, max_in_flight=budget, min_room=2)

    assert [claim.work_id for claim in second.claims] == [deploy]


def test_upkeep_is_claimed_a_share_at_a_time_while_intent_is_claimed_at_once(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    """A completion that frees one upkeep seat does not cost an upkeep claim (which reads the
    upkeep classes' backlog); a deploy admitted meanwhile is still claimed alone."""
    budget, share = 8, 2
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=REPAIR_LANES, per_lane=2)

    def claim_share() -> list[values.Claim]:
        with db.transaction() as session:
            return work_claims.claim_share(
                session, policy, max_in_flight=budget, min_room=share
            ).claims

    first = claim_share()
    assert len(first) == work_claims.upkeep_budget(budget)
    _finish(db, policy, first[0])
    assert claim_share() == []  # one upkeep seat free: less than a share

    deploy = _deploy(db, namespace_id, actor)
    assert [claim.work_id for claim in claim_share()] == [deploy]

    _finish(db, policy, first[1])
    refill = claim_share()
    assert len(refill) == share
    assert set(_kinds(refill)) == {WorkKind.REVISION_MAINTENANCE}


@pytest.mark.parametrize(("budget", "upkeep"), [(1, 1), (2, 1), (4, 3), (8, 6), (64, 48)])
def test_the_upkeep_budget_leaves_a_quarter_for_intent_but_never_nothing_for_upkeep(
    budget: int, upkeep: int
) -> None:
    assert work_claims.upkeep_budget(budget) == upkeep


def _claim_plan(db: Database, params: dict[str, object]) -> str:
    """EXPLAIN ANALYZE of the claim statement (rolled back: nothing stays claimed)."""
    statement = work_claims.SQL["claim"]
    with db.transaction() as session:
        lines = session.execute(sa.text(f"EXPLAIN (ANALYZE, COSTS OFF) {statement.text}"), params)
        plan = "\n".join(lines.scalars())
        session.rollback()
    return plan


_INDEX_READ = re.compile(
    r"Index Only Scan using controller_work_ready .*actual time=\S+ rows=(\d+)"
)


def test_the_claim_reads_a_bounded_window_of_each_class_over_a_deep_backlog(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=50, per_lane=1_000)
        queue_steps.fill(session, actor, 50_000)
    window = 1_000
    params = work_claims.claim_parameters(policy, limit=10, upkeep_limit=None, window=window)
    plan = _claim_plan(db, params)

    assert "Seq Scan on controller_work" not in plan, plan
    reads = [int(n) for n in _INDEX_READ.findall(plan)]
    assert reads, plan
    assert max(reads) <= window, plan


_CANDIDATES = re.compile(r"CTE Scan on candidates .*actual time=\S+ rows=(\d+)")


def test_a_share_of_upkeep_seats_reads_a_window_sized_to_them(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=50, per_lane=100)
        queue_steps.fill(session, actor, 5_000)

    def candidates(upkeep_limit: int | None) -> int:
        params = work_claims.claim_parameters(
            policy, limit=16, upkeep_limit=upkeep_limit, window=None
        )
        plan = _claim_plan(db, params)
        [read] = [int(n) for n in _CANDIDATES.findall(plan)]
        return read

    # the intent class's window, and the repairs' class: a full one, or one sized to 4 seats
    assert candidates(None) == 2 * work_claims.MIN_WINDOW
    assert candidates(4) == work_claims.MIN_WINDOW + work_claims.MIN_UPKEEP_WINDOW


def test_lanes_with_a_live_claim_do_not_fill_the_window(
    db: Database, owner_db: Database, policy: values.QueuePolicy, actor: str, namespace_id: str
) -> None:
    with owner_db.transaction() as session:
        queue_steps.fill_repairs(session, namespace_id, actor, lanes=2, per_lane=20)
    with db.transaction() as session:
        [first] = work_claims.claim(session, policy, limit=1)
    with owner_db.transaction() as session:
        # every queued item of the claimed lane is older than the other lane's
        busy = (
            session.execute(
                sa.text(
                    "UPDATE occ.controller_work SET available_at = available_at - interval '1 day'"
                    " WHERE lane = (SELECT lane FROM occ.controller_work WHERE id = :id)"
                    "   AND state = 'queued' RETURNING lane"
                ),
                {"id": first.work_id},
            )
            .scalars()
            .all()
        )
        other_head = session.execute(
            sa.text(
                "SELECT id FROM occ.controller_work WHERE state = 'queued' AND lane <> :lane"
                " ORDER BY available_at, created_at, id LIMIT 1"
            ),
            {"lane": busy[0]},
        ).scalar_one()
    assert len(busy) == 19

    with db.transaction() as session:
        claims = work_claims.claim(session, policy, limit=1, window=5)

    assert [claim.work_id for claim in claims] == [other_head]
