"""``ClaimContext`` without its threads or a database: the watch on an injected clock loses the
claim after a whole lease of silence and not before, and a worker shutdown interrupts the pass.

The contexts are not entered (the process's renewal thread never sees them) but for the last
test, and their database is a stand-in whose every
transaction raises: a test sees exactly when the context would have gone to the database.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from typing import cast

import pytest

from occ.drivers.compute import base
from occ.foundation import errors
from occ.reconcile import context
from occ.state import values, work_keys
from occ.state.db import Database
from tests.support import clock

LEASE_MS = 15_000
POLICY = values.QueuePolicy(lease_ms=LEASE_MS)


def _claim() -> values.Claim:
    key = work_keys.revision_reconcile(f"rev_{uuid.uuid4()}")
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return values.Claim(
        work_id=str(key),
        key=key,
        token=uuid.uuid4(),
        owner=values.WorkOwner(namespace_id=f"ns_{uuid.uuid4()}", actor_id=f"prn_{uuid.uuid4()}"),
        attempt_count=1,
        claimed_at=now,
        lease_expires_at=now + dt.timedelta(milliseconds=LEASE_MS),
        created_at=now,
        running=True,
    )


class DatabaseUsed(Exception):
    """The context opened a transaction."""


class _Database:
    """Every transaction fails with ``error`` before any statement runs."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.transactions = 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.transactions += 1
        raise self.error
        yield  # a generator, for contextmanager

    autocommit_connection = transaction  # a renewal is one statement in autocommit


def _context(
    manual: clock.ManualClock,
    shutdown: threading.Event | None = None,
    database: _Database | None = None,
) -> context.ClaimContext:
    return context.ClaimContext(
        cast(Database, database or _Database(DatabaseUsed())),
        POLICY,
        _claim(),
        shutdown=shutdown,
        clock=manual,
    )


def test_the_watch_keeps_the_claim_through_a_whole_lease_of_silence() -> None:
    manual = clock.ManualClock()
    claim = _context(manual)

    for _ in range(3):
        manual.advance(LEASE_MS / 3000)
        claim.watch_once()

    assert not claim.lost and not claim.abort.is_set()


def test_the_watch_loses_the_claim_just_after_a_whole_lease_of_silence() -> None:
    manual = clock.ManualClock()
    claim = _context(manual)
    manual.advance(LEASE_MS / 1000 + 0.001)

    claim.watch_once()

    assert claim.lost and claim.abort.is_set() and not claim.interrupted
    with pytest.raises(errors.ClaimLost):
        claim.renew_now()  # a lost claim refuses before any database call
    with pytest.raises(base.Aborted):
        claim.operation().check()


def test_a_worker_shutdown_interrupts_the_pass_without_losing_the_claim() -> None:
    manual = clock.ManualClock()
    shutdown = threading.Event()
    claim = _context(manual, shutdown)
    claim.watch_once()
    assert not claim.abort.is_set()

    shutdown.set()
    claim.watch_once()

    assert claim.interrupted and claim.abort.is_set() and not claim.lost
    assert claim.operation().abort is claim.abort


def test_a_renewal_just_after_a_confirmation_needs_no_database() -> None:
    manual = clock.ManualClock()
    claim = _context(manual)
    manual.advance(LEASE_MS / 10_000 / 2)  # within a tenth of the lease of the start

    claim.renew_now()

    assert not claim.abort.is_set()


def test_a_renewal_later_in_the_lease_or_with_progress_goes_to_the_database() -> None:
    manual = clock.ManualClock()
    database = _Database(DatabaseUsed())
    claim = _context(manual, database=database)

    with pytest.raises(DatabaseUsed):
        claim.renew_now("REVISION_INCOMPLETE")  # progress is always written
    manual.advance(LEASE_MS / 10_000)
    with pytest.raises(DatabaseUsed):
        claim.renew_now()

    assert database.transactions == 2 and not claim.abort.is_set()


def test_a_renewal_the_database_refuses_loses_the_claim() -> None:
    manual = clock.ManualClock()
    claim = _context(manual, database=_Database(errors.ClaimLost("w")))
    manual.advance(LEASE_MS / 2000)

    with pytest.raises(errors.ClaimLost):
        claim.renew_now()

    assert claim.lost and claim.abort.is_set()


def test_an_operation_refuses_to_act_once_its_lease_may_have_run_out() -> None:
    """A worker frozen past its lease (SIGSTOP) must not act on waking, before any thread of
    its own has noticed: the operation itself measures the confirmed lease."""
    manual = clock.ManualClock()
    claim = _context(manual)
    operation = claim.operation()
    operation.check()  # just confirmed: fine

    manual.advance(LEASE_MS * 0.9 / 1000 - 0.01)
    operation.check()  # still inside the lease and its margin
    manual.advance(0.02)

    assert not claim.abort.is_set()  # no watch ran: only the operation's own check stops it
    with pytest.raises(base.Aborted):
        operation.check()
    with pytest.raises(base.Aborted):
        operation.wait(0)  # a wait that returns does not let the effect go on either


def test_the_process_thread_renews_a_third_into_the_lease_and_retries_a_third_later() -> None:
    manual = clock.ManualClock()
    database = _Database(errors.DependencyUnavailable("down"))
    claim = _context(manual, database=database)

    manual.advance(LEASE_MS / 3000 - 0.01)
    claim.tick()
    assert database.transactions == 0  # the start's confirmation is recent enough

    manual.advance(0.02)
    claim.tick()
    claim.tick()
    assert database.transactions == 1  # due once; the failure waits a third before a retry

    manual.advance(LEASE_MS / 3000)
    claim.tick()
    assert database.transactions == 2 and not claim.abort.is_set()


def test_the_process_thread_watches_every_entered_context() -> None:
    shutdown = threading.Event()
    entered = _context(clock.ManualClock(), shutdown)
    with entered:
        shutdown.set()
        assert entered.abort.wait(5)  # the shared thread ran its watch
    assert entered.interrupted
