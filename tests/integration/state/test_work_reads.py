"""Operator reads of the work queue: filtered keyset pages and the backlog, on PostgreSQL."""

from __future__ import annotations

from occ.state import keyset, values, work_claims, work_queue, work_reads
from occ.state.db import Database
from occ.state.work_keys import WorkKind
from tests.support import rows

_TEN = keyset.Window(limit=10)


def _world(db: Database) -> tuple[str, list[str]]:
    """An actor and three Namespaces, each with its ready work, in creation order."""
    with db.transaction() as session:
        actor = rows.principal(session)
        namespace_ids = [rows.namespace(session, created_by=actor) for _ in range(3)]
    for namespace_id in namespace_ids:  # one transaction each: distinct creation times
        with db.transaction() as session:
            work_queue.enqueue(session, *rows.namespace_work(namespace_id, actor))
    return actor, namespace_ids


def test_pages_run_newest_first_and_continue_below_a_position(db: Database) -> None:
    _, namespace_ids = _world(db)
    newest_first = [f"namespace:{n}:reconcile:ready" for n in reversed(namespace_ids)]
    with db.snapshot() as session:
        first = work_reads.page(session, keyset.Window(limit=2))
        assert [item.id for item in first] == newest_first[:2]
        after = keyset.NEWEST_FIRST.key(first[-1])
        rest = work_reads.page(session, keyset.Window(after=after, limit=2))
    assert [item.id for item in rest] == newest_first[2:]
    assert {item.kind for item in first + rest} == {WorkKind.NAMESPACE_READY}


def test_pages_filter_by_state_and_namespace(db: Database, policy: values.QueuePolicy) -> None:
    _, namespace_ids = _world(db)
    with db.transaction() as session:
        (claimed,) = work_claims.claim(session, policy, limit=1)
    with db.snapshot() as session:
        queued = work_reads.page(session, _TEN, state=values.WorkState.QUEUED)
        mine = work_reads.page(session, _TEN, namespace_id=namespace_ids[1])
        by_claim = work_reads.page(session, _TEN, state=values.WorkState.CLAIMED)
    assert [item.id for item in by_claim] == [claimed.work_id]
    assert claimed.work_id not in {item.id for item in queued} and len(queued) == 2
    assert [item.owner.namespace_id for item in mine] == [namespace_ids[1]]


def test_targets_follow_the_kind() -> None:
    assert work_reads.targets(WorkKind.NAMESPACE_READY) == ("ready", None)
    assert work_reads.targets(WorkKind.NAMESPACE_DELETED) == ("deleted", None)
    assert work_reads.targets(WorkKind.AGENT_STOPPED) == (None, "stopped")
    assert work_reads.targets(WorkKind.REVISION_RECONCILE) == (None, None)


def test_backlog_counts_pending_items_and_ages_the_oldest(db: Database) -> None:
    with db.snapshot() as session:
        assert work_reads.backlog(session) == work_reads.Backlog(pending=0, oldest_age_s=0.0)
    _world(db)
    with db.transaction() as session:
        oldest = work_reads.page(session, keyset.Window(limit=3))[-1]
        work_queue_now = work_queue.database_now(session)
        backlog = work_reads.backlog(session)
    assert backlog.pending == 3
    assert 0 < backlog.oldest_age_s <= (work_queue_now - oldest.created_at).total_seconds() + 1


def test_owner_names_name_the_namespaces_and_agents_that_exist(db: Database) -> None:
    with db.transaction() as session:
        actor = rows.principal(session)
        namespace_id = rows.namespace(session, created_by=actor, name="team-a")
        agent_id = rows.agent(session, namespace_id=namespace_id, name="helper")
    owners = [
        values.WorkOwner(namespace_id=namespace_id, actor_id=actor, agent_id=agent_id),
        values.WorkOwner(namespace_id=namespace_id, actor_id=actor),
        values.WorkOwner(
            namespace_id="ns_00000000-0000-4000-8000-000000000000",
            actor_id=actor,
            agent_id="agt_00000000-0000-4000-8000-000000000000",
        ),
    ]
    with db.snapshot() as session:
        assert work_reads.owner_names(session, owners) == {
            namespace_id: "team-a",
            agent_id: "helper",
        }
        assert work_reads.owner_names(session, []) == {}
