"""The control worker's claim policy: a batch once a share of the budget is free, and whether a
backlog remains."""

from __future__ import annotations

from occ.state import values, work_claims, work_queue
from occ.state.db import Database
from tests.support import rows

BUDGET = 8
MIN_ROOM = 2


def _enqueue(db: Database, count: int) -> None:
    with db.transaction() as session:
        actor = rows.principal(session)
        for _ in range(count):
            namespace_id = rows.namespace(session, created_by=actor)
            key, owner = rows.namespace_work(namespace_id, actor)
            work_queue.enqueue(session, key, owner)


def _share(db: Database, policy: values.QueuePolicy) -> work_claims.Batch:
    with db.transaction() as session:
        return work_claims.claim_share(session, policy, max_in_flight=BUDGET, min_room=MIN_ROOM)


def _finish(db: Database, policy: values.QueuePolicy, dispatch: values.Claim) -> None:
    with db.transaction() as session:
        run = work_queue.start(session, policy, dispatch)
        assert run is not None
        work_queue.complete(session, run)


def test_a_claim_waits_for_a_share_of_the_budget_and_says_when_a_backlog_remains(
    db: Database, policy: values.QueuePolicy
) -> None:
    _enqueue(db, BUDGET + MIN_ROOM)
    first = _share(db, policy)
    assert len(first.claims) == BUDGET and first.more  # a full batch: claim again soon

    full = _share(db, policy)
    assert full.claims == [] and not full.more  # no room: a completion's nudge comes later

    _finish(db, policy, first.claims[0])
    one_free = _share(db, policy)
    assert one_free.claims == [] and not one_free.more  # one free slot is less than the share

    _finish(db, policy, first.claims[1])
    share_free = _share(db, policy)
    assert len(share_free.claims) == MIN_ROOM and share_free.more  # full again: claim soon

    for dispatch in first.claims[2:]:
        _finish(db, policy, dispatch)
    partial = _share(db, policy)
    assert partial.claims == [] and not partial.more


def test_an_idle_fleet_claims_even_below_the_share(
    db: Database, policy: values.QueuePolicy
) -> None:
    _enqueue(db, 1)
    with db.transaction() as session:
        batch = work_claims.claim_share(session, policy, max_in_flight=BUDGET, min_room=BUDGET)
    assert len(batch.claims) == 1 and not batch.more
