"""``ClaimContext`` against a real PostgreSQL: a renewal is judged by the lease the database
granted, and a renewal that hangs (its row locked by another transaction) fails within the
renewal connection's timeout, a quarter of the lease, and stops the pass."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from occ.foundation import codes, errors
from occ.reconcile import context
from occ.settings.config import Settings
from occ.state import values
from occ.state.db import Database
from occ.tasks import worker_process
from tests.support import databases, rows
from tests.support.held_elsewhere import held_elsewhere
from tests.support.queue_steps import Queue

POLICY = values.QueuePolicy(lease_ms=2_000, dispatch_lease_ms=30_000)


@pytest.fixture
def run(db: Database, owner_db: Database) -> values.Claim:
    """A started claim on a provisioning Namespace's work."""
    with db.transaction() as session:
        actor = rows.principal(session)
        namespace_id = rows.namespace(session, created_by=actor)
    queue = Queue(db, owner_db, POLICY)
    queue.enqueue_namespace(namespace_id, actor)
    return queue.run_one()


@pytest.fixture
def renewals(database_urls: databases.DatabaseUrls) -> Iterator[Database]:
    """The worker's renewal pool (its statement timeout: a quarter of the lease)."""
    database = worker_process.renewal_database(Settings(database_url=database_urls.app), POLICY)
    try:
        yield database
    finally:
        database.dispose()


def test_a_renewal_returns_the_lease_the_database_granted(
    db: Database, renewals: Database, run: values.Claim
) -> None:
    claim = context.ClaimContext(db, POLICY, run, renewals=renewals)
    time.sleep(POLICY.lease_ms / 10_000)  # past the freshness of the start

    claim.renew_now()

    assert not claim.abort.is_set() and claim.leased()
    assert claim.claim.lease_expires_at > run.lease_expires_at


def test_a_renewal_that_hangs_fails_within_its_timeout_and_stops_the_pass(
    db: Database, owner_db: Database, renewals: Database, run: values.Claim
) -> None:
    claim = context.ClaimContext(db, POLICY, run, renewals=renewals)

    @contextlib.contextmanager
    def row_locked() -> Iterator[None]:
        with owner_db.transaction() as session:
            session.execute(
                sa.text("SELECT 1 FROM occ.controller_work WHERE id = :id FOR UPDATE"),
                {"id": run.work_id},
            )
            yield

    with held_elsewhere(row_locked):
        started = time.monotonic()
        with pytest.raises(errors.ClaimLost):
            claim.renew_now("REVISION_INCOMPLETE")
        waited_s = time.monotonic() - started

    assert claim.stop_code == codes.Code.CLAIM_RENEWAL_FAILED and claim.abort.is_set()
    assert waited_s < POLICY.lease_ms / 3000
