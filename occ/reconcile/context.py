"""ClaimContext: keeps a running claim alive while a pass works, and says when it is gone.

It also carries what a terminal failure of the claimed item changes beyond the work row (its
kind's ``FailureEffect``), so every settlement of the pass applies it (``settle``).

One background thread per process (``RENEWER``) watches every entered context and renews each
lease once a third of it has passed since the last confirmed renewal; ``renew_now()`` renews
before each Compute effect. The lease is judged by what the database granted, never by when
its answer arrived: a renewal sent at ``t`` (this worker's monotonic clock) that the database
answers with ``L`` ms of lease left holds the lease until ``t + L`` at the latest, because the
database extended it at or after ``t``. Effects stop (the abort event is set, the claim counts
as lost, ``worker.claim-renewal-warning`` says why) when a renewal is refused
(``CLAIM_RENEWAL_REFUSED``), answered after the lease it renewed could have lapsed
(``CLAIM_RENEWAL_LATE``, with ``durationMs``), failed, timeout included
(``CLAIM_RENEWAL_FAILED``), or when no renewal was confirmed before the granted deadline
(``CLAIM_LEASE_LAPSED``); and when the worker shuts down (interrupted, not lost). Every
renewal runs on a connection whose statements time out after ``renewal_timeout_ms`` (a quarter
of the lease). Drivers watch the abort event and ``leased()`` and stop; the pass then
publishes nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final, Protocol

from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.state import values, work_queue
from occ.state.db import Database, Session
from occ.telemetry import observability

FailureEffect = Callable[[Session, values.WorkItem, Mapping[str, Any]], None]
"""What a terminal failure of an item also changes, in the transaction that failed it."""

LEASE_MARGIN: Final = 0.1
"""Share of the lease ``leased()`` keeps in hand before the granted deadline."""

RENEWAL_TIMEOUT_SHARE: Final = 4
"""A renewal times out after 1/``RENEWAL_TIMEOUT_SHARE`` of the lease (less than the third
between two renewals, so a renewal that hangs is over before the next is due)."""


def renewal_timeout_ms(policy: values.QueuePolicy) -> int:
    """The statement timeout of a renewal's connection: a quarter of the lease."""
    return max(policy.lease_ms // RENEWAL_TIMEOUT_SHARE, 1)


def no_effect(session: Session, item: values.WorkItem, details: Mapping[str, Any]) -> None:
    """Nothing beyond the work row (the failure is visible there and in its evidence)."""


class ClaimGuard(Protocol):
    """What a pass needs of its claim around each Compute call."""

    def renew_now(self, progress_code: str | None = None) -> None:
        """Renew before an effect; raise ``ClaimLost`` when the claim is gone."""

    def operation(self) -> base.Operation:
        """The driver's view of the claim (its abort event)."""


class ClaimContext:
    """Lease renewal and cancellation for one running claim.

    ``clock`` (monotonic seconds) measures when renewals were sent and answered; tests pass
    their own to drive the rules without waiting. ``granted_at`` is when the start that granted
    the first lease (a full ``lease_ms``) was sent, on that clock (unset: now).
    ``renewals`` is the database the renewals run on (unset: ``database``); a worker gives it
    a statement timeout of ``renewal_timeout_ms``. ``on_database_clock`` receives the database
    clock each confirmed renewal returned and its round trip (the process's clock skew).
    """

    def __init__(
        self,
        database: Database,
        policy: values.QueuePolicy,
        claim: values.Claim,
        *,
        shutdown: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_failed: FailureEffect = no_effect,
        granted_at: float | None = None,
        renewals: Database | None = None,
        on_database_clock: Callable[[dt.datetime, float], object] | None = None,
    ) -> None:
        self._database = renewals or database
        self._clock = clock
        self._policy = policy
        self._claim = claim
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._shutdown = shutdown or threading.Event()
        self._on_database_clock = on_database_clock
        self.abort = threading.Event()
        self.lost = False
        self.interrupted = False
        self.stop_code: codes.Code | None = None
        """Why effects stopped (a ``CLAIM_RENEWAL_*`` or ``CLAIM_LEASE_LAPSED`` code)."""
        sent = self._clock() if granted_at is None else granted_at
        self._confirmed_at = sent
        """When the last confirmed renewal (or the start) was sent."""
        self._deadline = sent + policy.lease_ms / 1000
        """Until when the lease surely holds, on ``clock``: the granted deadline."""
        self._attempted_at = sent
        self.on_failed = on_failed
        """The item's kind's terminal-failure effect."""

    @property
    def claim(self) -> values.Claim:
        with self._lock:
            return self._claim

    @property
    def interval_s(self) -> float:
        return self._policy.lease_ms / 3000

    @property
    def timeout_s(self) -> float:
        """How long one renewal may take (its connection's statement timeout)."""
        return renewal_timeout_ms(self._policy) / 1000

    def operation(self) -> base.Operation:
        """The driver's view of this claim."""
        return base.Operation(
            work_id=self._claim.work_id,
            claim_token=str(self._claim.token),
            abort=self.abort,
            leased=self.leased,
            attempt=self._claim.attempt_count,
        )

    def leased(self) -> bool:
        """Whether the granted lease surely still holds, a tenth of it kept in hand: past that,
        an effect must not start even if no thread has noticed yet."""
        with self._lock:
            deadline = self._deadline
        return self._clock() < deadline - self._policy.lease_ms * LEASE_MARGIN / 1000

    def renew_now(self, progress_code: str | None = None) -> None:
        """Renew before an effect; raise ``ClaimLost`` (and abort) when effects must stop."""
        if self.abort.is_set():
            raise errors.ClaimLost(self._claim.work_id, "the pass was aborted")
        with self._lock:
            fresh = self._clock() - self._confirmed_at < self._policy.lease_ms / 10000
            held_until = self._deadline
        if fresh and progress_code is None:
            return  # confirmed a moment ago (e.g. the start): the lease is nearly full
        sent = self._clock()
        try:
            with self._database.autocommit_connection() as connection:  # one statement
                renewal = work_queue.renew_lease(
                    connection, self._policy, self.claim, progress_code=progress_code
                )
        except errors.ClaimLost:
            self._stop(codes.Code.CLAIM_RENEWAL_REFUSED, sent)
            raise
        except errors.OccError as exc:
            self._stop(codes.Code.CLAIM_RENEWAL_FAILED, sent, error=exc.code)
            raise errors.ClaimLost(self._claim.work_id, "a lease renewal failed") from exc
        received = self._clock()
        granted_until = sent + renewal.lease_left_ms / 1000
        if received >= min(held_until, granted_until):
            # the lease held when it was sent, or the one granted, could have run out before
            # the answer arrived: a late answer never revives a pass
            self._stop(codes.Code.CLAIM_RENEWAL_LATE, sent)
            raise errors.ClaimLost(self._claim.work_id, "a lease renewal answered late")
        with self._lock:
            self._claim = renewal.claim
            if sent >= self._confirmed_at:
                self._confirmed_at = sent
                self._deadline = granted_until  # the database replaced the deadline
        if self._on_database_clock is not None:
            self._on_database_clock(renewal.database_now, received - sent)

    def __enter__(self) -> ClaimContext:
        RENEWER.add(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stopped.set()
        RENEWER.remove(self)

    # -- background ---------------------------------------------------------------------------

    @property
    def watch_interval_s(self) -> float:
        return min(0.1, self._policy.lease_ms / 10_000)

    def tick(self) -> None:
        """One turn of the process's renewal thread: watch, and renew when a third of the lease
        has passed since the last confirmation."""
        self.watch_once()
        if self.abort.is_set() or self._stopped.is_set():
            return
        with self._lock:
            now = self._clock()
            due = now - max(self._confirmed_at, self._attempted_at) >= self.interval_s
            if due:
                self._attempted_at = now
        if not due:
            return
        try:
            self.renew_now()
        except errors.ClaimLost:
            return  # effects stopped; _stop said why

    def watch_once(self) -> None:
        """Abort on a worker shutdown, or once the granted deadline passed unrenewed."""
        if self._shutdown.is_set() and not self.abort.is_set():
            self.interrupted = True
            self.abort.set()
        with self._lock:
            lapsed = self._clock() > self._deadline
        if lapsed and not self.abort.is_set():
            # no renewal confirmed before the granted deadline: another worker may have it now
            self._stop(codes.Code.CLAIM_LEASE_LAPSED, None)

    def _stop(self, code: codes.Code, sent: float | None, **fields: Any) -> None:
        with self._lock:
            first = self.stop_code is None
            if first:
                self.stop_code = code
            self.lost = True
        self.abort.set()
        if not first:
            return
        if sent is not None:
            fields["durationMs"] = round((self._clock() - sent) * 1000, 1)
        observability.log(
            "worker.claim-renewal-warning",
            level=logging.WARNING,
            code=code,
            workId=self._claim.work_id,
            **fields,
        )


class Renewer:
    """The one renewal thread of a process, shared by all of its entered claim contexts.

    Started on first use in each process (a forked child starts its own); it sleeps while no
    claim is live.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: set[ClaimContext] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, context: ClaimContext) -> None:
        with self._lock:
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid = os.getpid()
                self._contexts = set()
                self._thread = threading.Thread(target=self._run, name="occ-claims", daemon=True)
                self._thread.start()
            self._contexts.add(context)
        self._wake.set()

    def remove(self, context: ClaimContext) -> None:
        with self._lock:
            self._contexts.discard(context)

    def _run(self) -> None:
        while True:
            with self._lock:
                contexts = list(self._contexts)
            if not contexts:
                self._wake.wait()
                self._wake.clear()
                continue
            self._wake.wait(min(context.watch_interval_s for context in contexts))
            self._wake.clear()
            for context in contexts:
                context.tick()


RENEWER: Final = Renewer()
"""This process's renewal thread."""
