"""The client-side rate limit: a token bucket on an injected clock, nothing sleeping for real."""

from __future__ import annotations

import pytest

from occ.drivers.compute.kubernetes import ratelimit
from tests.support.clock import ManualClock


def _bucket(qps: float, burst: int) -> tuple[ratelimit.TokenBucket, ManualClock, list[float]]:
    clock = ManualClock()
    slept: list[float] = []
    return ratelimit.TokenBucket(qps, burst, clock=clock, sleep=slept.append), clock, slept


def test_a_burst_passes_at_once_and_the_next_request_waits_its_turn() -> None:
    bucket, _, slept = _bucket(qps=4, burst=3)
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert slept == []
    assert bucket.acquire() == pytest.approx(0.25)
    assert slept == [pytest.approx(0.25)]


def test_waiters_are_served_in_order_at_the_rate() -> None:
    bucket, _, _ = _bucket(qps=10, burst=1)
    bucket.reserve()
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == pytest.approx([0.1, 0.2, 0.3, 0.4])


def test_tokens_come_back_with_time_but_never_beyond_the_burst() -> None:
    bucket, clock, _ = _bucket(qps=2, burst=4)
    for _ in range(4):
        bucket.reserve()
    clock.advance(1.0)  # two tokens back
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])
    clock.advance(3600)  # a long idle hour still leaves only a burst
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.5)


def test_the_long_run_rate_never_exceeds_qps() -> None:
    bucket, clock, _ = _bucket(qps=50, burst=100)
    start = clock.now_s
    for _ in range(1_100):
        clock.advance(bucket.reserve())  # each caller sends when its token is due
    # 1,100 requests: 100 of the burst at once, then 1,000 at 50 a second
    assert clock.now_s - start == pytest.approx(1_000 / 50)


@pytest.mark.parametrize(("qps", "burst"), [(0, 10), (-1, 10), (5, 0)])
def test_a_rate_limit_needs_a_positive_rate_and_burst(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        ratelimit.TokenBucket(qps, burst)
