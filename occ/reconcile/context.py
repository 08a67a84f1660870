"""ClaimContext: keeps a running claim alive while a pass works, and says when it is gone.

It also carries what a terminal failure of the claimed item changes beyond the work row (its
kind's ``FailureEffect``), so every settlement of the pass applies it (``settle``).

One background thread per process (``RENEWER``) watches every entered context and renews each
lease once a third of it has passed since the last confirmed renewal; ``renew_now()`` renews
before each Compute effect. The abort event is set when a renewal finds the claim gone, when
no renewal was confirmed within one lease of being sent (a silent database), or when the
worker shuts down. Drivers watch that event and stop; the pass then publishes nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final, Protocol

from occ.drivers.compute import base
from occ.foundation import errors
from occ.state import values, work_queue
from occ.state.db import Database, Session
from occ.telemetry import observability

FailureEffect = Callable[[Session, values.WorkItem, Mapping[str, Any]], None]
"""What a terminal failure of an item also changes, in the transaction that failed it."""


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

    ``clock`` (monotonic seconds) measures how long ago a renewal was confirmed; tests pass
    their own to drive the silent-database rule without waiting.
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
    ) -> None:
        self._database = database
        self._clock = clock
        self._policy = policy
        self._claim = claim
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._shutdown = shutdown or threading.Event()
        self.abort = threading.Event()
        self.lost = False
        self.interrupted = False
        self._confirmed_at = self._clock()
        self._attempted_at = self._confirmed_at
        self.on_failed = on_failed
        """The item's kind's terminal-failure effect."""

    @property
    def claim(self) -> values.Claim:
        with self._lock:
            return self._claim

    @property
    def interval_s(self) -> float:
        return self._policy.lease_ms / 3000

    def operation(self) -> base.Operation:
        """The driver's view of this claim."""
        return base.Operation(
            work_id=self._claim.work_id,
            claim_token=str(self._claim.token),
            abort=self.abort,
            leased=self.leased,
        )

    def leased(self) -> bool:
        """Whether the last confirmed lease is surely still live by this worker's clock.

        The lease was granted just before its renewal returned, so a tenth of it is kept as
        a margin; past that, an effect must not start even if no thread has noticed yet.
        """
        with self._lock:
            confirmed_for = self._clock() - self._confirmed_at
        return confirmed_for < self._policy.lease_ms * 0.9 / 1000

    def renew_now(self, progress_code: str | None = None) -> None:
        """Renew before an effect; raise ``ClaimLost`` (and abort) when the claim is gone."""
        if self.abort.is_set():
            raise errors.ClaimLost(self._claim.work_id, "the pass was aborted")
        with self._lock:
            fresh = self._clock() - self._confirmed_at < self._policy.lease_ms / 10000
        if fresh and progress_code is None:
            return  # confirmed a moment ago (e.g. the start): the lease is nearly full
        try:
            with self._database.autocommit_connection() as connection:  # one statement
                renewed = work_queue.renew(
                    connection, self._policy, self.claim, progress_code=progress_code
                )
        except errors.ClaimLost:
            self._lose()
            raise
        with self._lock:
            self._claim = renewed
            self._confirmed_at = self._clock()

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
                self._attempted_at = now  # a failed renewal is tried again a third later
        if not due:
            return
        try:
            self.renew_now()
        except errors.ClaimLost:
            return
        except errors.OccError as exc:
            observability.log(
                "worker.claim-renewal-warning",
                level=logging.WARNING,
                workId=self._claim.work_id,
                error=exc.code,
            )

    def watch_once(self) -> None:
        """Abort on a worker shutdown, or when no renewal was confirmed for a whole lease."""
        if self._shutdown.is_set() and not self.abort.is_set():
            self.interrupted = True
            self.abort.set()
        with self._lock:
            silent_for = self._clock() - self._confirmed_at
        if silent_for > self._policy.lease_ms / 1000 and not self.abort.is_set():
            # no renewal confirmed for a whole lease: assume another worker has it now
            self._lose()

    def _lose(self) -> None:
        self.lost = True
        self.abort.set()


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
