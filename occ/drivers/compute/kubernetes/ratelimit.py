"""The ``kubernetes`` driver's client-side rate limit: a token bucket over its requests.

``qps`` tokens are added every second up to ``burst``; each request takes one, and a request
that finds none waits its turn (each waiter reserves the next token, so waiters are served in
order and the long-run rate never exceeds ``qps``). The clock and the sleep are injected, so
the rule is tested without time passing. It knows nothing of requests or of the cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """At most ``burst`` requests at once, ``qps`` a second on average."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a rate limit needs a positive rate and a burst of at least 1")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = clock()

    def reserve(self) -> float:
        """Take the next token; the seconds until it is due (0 when one was there)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Take a token, waiting until it is due; how long that was."""
        wait_s = self.reserve()
        if wait_s > 0:
            self._sleep(wait_s)
        return wait_s
