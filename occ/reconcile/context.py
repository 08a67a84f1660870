"""ClaimContext: keeps a running claim alive while a pass works, and says when it is gone.

A background thread renews the lease every third of it; ``renew_now()`` renews before each
Compute effect. The abort event is set when a renewal finds the claim gone, when no renewal
was confirmed within one lease of being sent (a silent database), or when the worker shuts
down. Drivers watch that event and stop; the pass then publishes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from occ import errors, observability
from occ.db import Database
from occ.drivers.compute import base
from occ.state import values, work_queue


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
        self._threads: list[threading.Thread] = []

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
            with self._database.transaction() as session:
                renewed = work_queue.renew(
                    session, self._policy, self.claim, progress_code=progress_code
                )
        except errors.ClaimLost:
            self._lose()
            raise
        with self._lock:
            self._claim = renewed
            self._confirmed_at = self._clock()

    def __enter__(self) -> ClaimContext:
        for target, name in ((self._renew_loop, "renew"), (self._watch, "watch")):
            thread = threading.Thread(target=target, name=f"occ-claim-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=2)

    # -- background ---------------------------------------------------------------------------

    def _renew_loop(self) -> None:
        while not self._stopped.wait(self.interval_s):
            if self.abort.is_set():
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

    def _watch(self) -> None:
        while not self._stopped.wait(min(0.1, self._policy.lease_ms / 10_000)):
            self.watch_once()

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
