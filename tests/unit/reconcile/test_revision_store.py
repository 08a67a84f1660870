"""``revision_store.maintenance_bucket``: the next maintenance bucket is strictly after the
running one and starts after now, so a chain never repeats a bucket nor schedules the past."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occ.reconcile import revision_store


@pytest.mark.parametrize(
    ("now_ms", "interval_ms", "current", "expected"),
    [
        (0, 1_000, None, 1),
        (999, 1_000, None, 1),
        (1_000, 1_000, None, 2),  # on a boundary: that bucket is now, the next one is after
        (1_500, 1_000, None, 2),
        (1_500, 1_000, 1, 2),
        (1_500, 1_000, 5, 6),  # the running bucket is ahead of the clock: still after it
        (9_999, 1_000, 3, 10),  # the running bucket is long past: the next one after now
        (59_999.5, 60_000, None, 1),  # fractional milliseconds from the database clock
        (7, 1, None, 8),
    ],
)
def test_the_next_bucket(
    now_ms: float, interval_ms: int, current: int | None, expected: int
) -> None:
    assert revision_store.maintenance_bucket(now_ms, interval_ms, current) == expected


@given(
    now_ms=st.floats(min_value=0, max_value=1e13, allow_nan=False),
    interval_ms=st.integers(min_value=1, max_value=86_400_000),
    current=st.none() | st.integers(min_value=0, max_value=10**9),
)
def test_the_next_bucket_is_the_first_one_after_now_and_the_running_one(
    now_ms: float, interval_ms: int, current: int | None
) -> None:
    bucket = revision_store.maintenance_bucket(now_ms, interval_ms, current)

    assert bucket * interval_ms > now_ms
    assert current is None or bucket > current
    # and no later than it must be: the bucket before it was now or past, or was the running one
    assert (bucket - 1) * interval_ms <= now_ms or bucket - 1 == current
