"""A clock a test moves by hand, for code that takes an injected clock (never the real time)."""

from __future__ import annotations


class ManualClock:
    """Seconds on a clock that only moves when told; call it like ``time.monotonic``."""

    def __init__(self, start_s: float = 1_000_000.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    @property
    def now_ms(self) -> float:
        return self.now_s * 1000

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not move backwards")
        self.now_s += seconds
