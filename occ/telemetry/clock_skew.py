"""How far this process's wall clock is from the database's: measured, exported, told once.

occ judges every lease and every expiry on the database clock (``docs/queue.md``), so a skewed
host does not stall work; the skew is still worth knowing (timestamps in logs, gauges read
against the wall clock). Every answer that carries the database clock (a worker's start-up
check, each lease renewal) is recorded here with its round trip: the skew is the wall clock
at the middle of the round trip minus the database clock, exported as
``occ_clock_skew_seconds``; the first measurement past ``WARN_AFTER_S`` either way is logged
``clock.skew`` (WARNING) once per process.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from occ.telemetry import metrics, observability

WARN_AFTER_S: Final = 2.0
"""A skew larger than this, either way, is logged (once per process)."""


class ClockSkew:
    """The skew of one process, as last measured."""

    def __init__(
        self,
        *,
        warn_after_s: float = WARN_AFTER_S,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._warn_after_s = warn_after_s
        self._wall = wall
        self._lock = threading.Lock()
        self._warned = False
        self.skew_s: float | None = None
        """The last measurement (``None``: never measured)."""

    def record(self, database_now: dt.datetime, round_trip_s: float) -> float:
        """Record an answer that carried ``database_now`` and took ``round_trip_s`` (called
        just after it arrived); the skew in seconds."""
        wall_then = self._wall() - max(round_trip_s, 0.0) / 2
        skew = wall_then - database_now.timestamp()
        metrics.CLOCK_SKEW.set(skew)
        with self._lock:
            self.skew_s = skew
            warn = abs(skew) > self._warn_after_s and not self._warned
            if warn:
                self._warned = True
        if warn:
            observability.log(
                "clock.skew",
                level=logging.WARNING,
                skewMs=round(skew * 1000),
                durationMs=round(round_trip_s * 1000, 1),
            )
        return skew


PROCESS: Final = ClockSkew()
"""This process's measurements."""
