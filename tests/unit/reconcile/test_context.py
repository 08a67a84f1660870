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
from occ.foundation import codes, errors
from occ.reconcile import context
from occ.state import values, work_keys, work_queue
from occ.state.db import Database
from occ.telemetry import observability
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
    assert claim.operation().attempt == 1  # the claim's, as the journal names it


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


def test_the_process_thread_renews_a_third_into_the_lease() -> None:
    manual = clock.ManualClock()
    database = _Database(DatabaseUsed())
    claim = _context(manual, database=database)

    manual.advance(LEASE_MS / 3000 - 0.01)
    claim.tick()
    assert database.transactions == 0  # the start's confirmation is recent enough

    manual.advance(0.02)
    with pytest.raises(DatabaseUsed):
        claim.tick()
    assert database.transactions == 1


def test_a_renewal_that_fails_stops_the_effects(caplog: pytest.LogCaptureFixture) -> None:
    manual = clock.ManualClock()
    database = _Database(errors.DependencyUnavailable("down"))
    claim = _context(manual, database=database)
    manual.advance(LEASE_MS / 3000 + 0.01)

    claim.tick()  # the process thread's renewal fails: no retry while effects go on

    assert claim.abort.is_set() and claim.lost
    assert claim.stop_code == codes.Code.CLAIM_RENEWAL_FAILED
    (warning,) = _warnings(caplog)
    assert warning["code"] == "CLAIM_RENEWAL_FAILED"
    assert warning["error"] == "DEPENDENCY_UNAVAILABLE" and "durationMs" in warning
    with pytest.raises(errors.ClaimLost):
        claim.renew_now()
    assert database.transactions == 1


def test_a_renewal_the_database_refuses_stops_the_effects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manual = clock.ManualClock()
    claim = _context(manual, database=_Database(errors.ClaimLost("w")))
    manual.advance(LEASE_MS / 2000)

    with pytest.raises(errors.ClaimLost):
        claim.renew_now()

    assert claim.stop_code == codes.Code.CLAIM_RENEWAL_REFUSED and claim.abort.is_set()
    assert [event["code"] for event in _warnings(caplog)] == ["CLAIM_RENEWAL_REFUSED"]


# -- the lease the database granted ----------------------------------------------------------


class _Renewals:
    """Renewals that take ``takes_s`` on the manual clock and grant ``grants_ms`` of lease."""

    def __init__(self, manual: clock.ManualClock, *, takes_s: float, grants_ms: float) -> None:
        self.manual = manual
        self.takes_s = takes_s
        self.grants_ms = grants_ms
        self.sent = 0

    def renew_lease(
        self,
        connection: object,
        policy: values.QueuePolicy,
        claim: values.Claim,
        *,
        progress_code: str | None = None,
    ) -> values.Renewal:
        self.sent += 1
        self.manual.advance(self.takes_s)
        return values.Renewal(
            claim=claim,
            lease_left_ms=self.grants_ms,
            database_now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        )


class _Connections:
    """A database whose autocommit connection is a placeholder (the renewal is replaced)."""

    @contextlib.contextmanager
    def autocommit_connection(self) -> Iterator[object]:
        yield object()


def _renewing(
    monkeypatch: pytest.MonkeyPatch, manual: clock.ManualClock, *, takes_s: float, grants_ms: float
) -> tuple[context.ClaimContext, _Renewals]:
    renewals = _Renewals(manual, takes_s=takes_s, grants_ms=grants_ms)
    monkeypatch.setattr(work_queue, "renew_lease", renewals.renew_lease)
    claim = context.ClaimContext(
        cast(Database, _Connections()), POLICY, _claim(), clock=manual, granted_at=manual()
    )
    return claim, renewals


def test_the_lease_runs_from_when_the_renewal_was_sent_not_when_it_was_answered(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A renewal answered 3 s after it was sent: the database granted its lease at some moment
    in those 3 s, so the lease is surely held only until the send plus what it granted."""
    manual = clock.ManualClock()
    claim, _ = _renewing(monkeypatch, manual, takes_s=3.0, grants_ms=LEASE_MS)
    manual.advance(LEASE_MS / 3000)
    sent = manual()

    claim.renew_now()  # answered at sent + 3 s
    assert not claim.abort.is_set()

    manual.advance(sent + LEASE_MS * (1 - context.LEASE_MARGIN) / 1000 - manual() + 0.01)
    assert not claim.leased()  # no effect starts in the margin of the granted deadline
    manual.advance(LEASE_MS * context.LEASE_MARGIN / 1000)
    claim.watch_once()
    assert claim.lost and claim.stop_code == codes.Code.CLAIM_LEASE_LAPSED
    assert [event["code"] for event in _warnings(caplog)] == ["CLAIM_LEASE_LAPSED"]


def test_a_shorter_grant_than_asked_is_the_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    manual = clock.ManualClock()
    claim, _ = _renewing(monkeypatch, manual, takes_s=0.01, grants_ms=LEASE_MS / 2)
    manual.advance(LEASE_MS / 3000)
    sent = manual()

    claim.renew_now()
    manual.advance(sent + LEASE_MS / 2000 - manual() + 0.01)
    claim.watch_once()

    assert claim.stop_code == codes.Code.CLAIM_LEASE_LAPSED


def test_a_renewal_answered_after_the_lease_could_have_lapsed_stops_the_effects(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manual = clock.ManualClock()
    claim, renewals = _renewing(monkeypatch, manual, takes_s=LEASE_MS * 0.7 / 1000, grants_ms=0)
    renewals.grants_ms = LEASE_MS  # the database renewed: only the answer came late
    manual.advance(LEASE_MS / 3000 + 0.01)

    with pytest.raises(errors.ClaimLost):
        claim.renew_now()  # sent a third in, answered past the start's deadline

    assert claim.abort.is_set() and claim.stop_code == codes.Code.CLAIM_RENEWAL_LATE
    (warning,) = _warnings(caplog)
    assert warning["code"] == "CLAIM_RENEWAL_LATE"
    assert warning["durationMs"] == pytest.approx(LEASE_MS * 0.7, abs=1)
    assert not claim.leased()


def test_a_renewal_answered_within_the_lease_keeps_the_pass_going(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manual = clock.ManualClock()
    claim, renewals = _renewing(monkeypatch, manual, takes_s=LEASE_MS * 0.5 / 1000, grants_ms=0)
    renewals.grants_ms = LEASE_MS
    manual.advance(LEASE_MS / 3000)

    claim.renew_now()  # answered at 5/6 of the start's lease: late, but not too late

    assert not claim.abort.is_set() and claim.leased() and not _warnings(caplog)


def test_every_renewal_times_out_within_a_third_of_the_lease() -> None:
    for lease_ms in (300, 3_000, 15_000, 60_000):
        policy = values.QueuePolicy(lease_ms=lease_ms)
        assert 0 < context.renewal_timeout_ms(policy) < lease_ms / 3


def _warnings(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    """The ``worker.claim-renewal-warning`` events logged, without their work id."""
    found = []
    for record in caplog.records:
        event = getattr(record, observability.EVENT_ATTRIBUTE, None)
        if event and event["event"] == "worker.claim-renewal-warning":
            found.append({k: v for k, v in event.items() if k not in ("event", "workId")})
    return found


def test_the_process_thread_watches_every_entered_context() -> None:
    shutdown = threading.Event()
    entered = _context(clock.ManualClock(), shutdown)
    with entered:
        shutdown.set()
        assert entered.abort.wait(5)  # the shared thread ran its watch
    assert entered.interrupted
