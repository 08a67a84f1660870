"""The start joined with its Namespace's reload: the start's fencing, the reload's row."""

from __future__ import annotations

import pytest

from occ.foundation import errors
from occ.state import namespaces, starts, values, work_queue
from occ.state.db import Database
from tests.support import namespace_status
from tests.support.queue_steps import Queue


@pytest.fixture
def dispatch(queue: Queue, namespace_id: str, actor: str) -> values.Claim:
    queue.enqueue_namespace(namespace_id, actor)
    return queue.claim_one()


def _start(
    db: Database, policy: values.QueuePolicy, dispatch: values.Claim
) -> starts.NamespaceStart | None:
    with db.autocommit_connection() as connection:
        return starts.start_namespace_work(connection, policy, dispatch.work_id, dispatch.token)


def test_the_start_returns_the_run_claim_and_the_namespace_as_a_read_finds_it(
    db: Database, policy: values.QueuePolicy, dispatch: values.Claim, namespace_id: str
) -> None:
    started = _start(db, policy, dispatch)

    assert started is not None
    run = started.claim
    assert run.running and run.token != dispatch.token
    assert (run.work_id, run.owner, run.attempt_count) == (
        dispatch.work_id,
        dispatch.owner,
        dispatch.attempt_count,
    )
    with db.transaction() as session:
        assert started.namespace == namespaces.get(session, namespace_id)
        work_queue.complete(session, run, code="NAMESPACE_READY")  # the run token writes


def test_a_redelivered_dispatch_starts_nothing_and_reads_nothing(
    db: Database, queue: Queue, policy: values.QueuePolicy, dispatch: values.Claim
) -> None:
    started = _start(db, policy, dispatch)
    assert started is not None

    assert _start(db, policy, dispatch) is None
    # the first run still holds the item: its token is the live one
    assert queue.progress(dispatch.work_id)[0] == values.WorkState.CLAIMED
    with db.transaction() as session:
        work_queue.renew(session, policy, started.claim)
    # and the dispatch token, never a run token, cannot write
    with pytest.raises(errors.ClaimLost), db.transaction() as session:
        work_queue.complete(session, dispatch, code="NAMESPACE_READY")


def test_an_expired_dispatch_lease_starts_nothing(
    db: Database, queue: Queue, policy: values.QueuePolicy, dispatch: values.Claim
) -> None:
    queue.expire(dispatch.work_id)

    assert _start(db, policy, dispatch) is None


def test_a_tombstoned_namespace_is_read_as_it_is(
    db: Database,
    owner_db: Database,
    policy: values.QueuePolicy,
    dispatch: values.Claim,
    namespace_id: str,
) -> None:
    namespace_status.set_status(owner_db, namespace_id, "deleting")
    with db.transaction() as session:
        assert namespaces.tombstone(session, namespace_id)

    started = _start(db, policy, dispatch)

    assert started is not None and started.namespace is not None
    assert started.namespace.id == namespace_id
    assert not started.namespace.live
