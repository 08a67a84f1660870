"""The observation schedule's arithmetic (``observations.phase_ranges``, ``phase_at``), without
a database: windows that follow each other cover every phase at least once per interval and
never skip one."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occ.state import observations

PHASES = observations.PHASES
SECOND = 1_000_000
"""Microseconds."""


SAMPLE = range(0, PHASES, 9_973)
"""The phases the properties check (a prime stride through all of them)."""


def _covers(ranges: tuple[tuple[int, int], tuple[int, int]], phase: int) -> bool:
    return any(low <= phase < high for low, high in ranges)


@pytest.mark.parametrize(
    ("start_us", "end_us", "expected"),
    [
        (0, 0, ((0, 0), (0, 0))),
        (5 * SECOND, 4 * SECOND, ((0, 0), (0, 0))),
        (0, 60 * SECOND, ((0, PHASES), (0, 0))),  # a whole interval: everything
        (0, 6 * SECOND, ((0, 100_000), (0, 0))),  # the first tenth
        (54 * SECOND, 66 * SECOND, ((900_000, PHASES), (0, 100_000))),  # wraps around
        (60 * SECOND + 1, 60 * SECOND + 2, ((0, 0), (0, 0))),  # shorter than a phase
    ],
)
def test_a_window_covers_the_phases_that_fell_due_in_it(
    start_us: int, end_us: int, expected: tuple[tuple[int, int], tuple[int, int]]
) -> None:
    assert observations.phase_ranges(start_us, end_us, 60 * SECOND) == expected


@given(
    interval_s=st.integers(min_value=1, max_value=3_600),
    start_us=st.integers(min_value=0, max_value=10**15),
    fractions=st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=40),
)
def test_windows_that_follow_each_other_skip_no_phase(
    interval_s: int, start_us: int, fractions: list[float]
) -> None:
    """Windows of at most an interval (the observer never takes a longer one)."""
    interval_us = interval_s * SECOND
    steps = [max(int(fraction * interval_us), 1) for fraction in fractions]
    counts: Counter[int] = Counter()
    moment = start_us
    for step in steps:
        ranges = observations.phase_ranges(moment, moment + step, interval_us)
        (low, high), (low2, high2) = ranges
        assert high <= low2 or high2 <= low or (low2, high2) == (0, 0)  # the two are disjoint
        counts.update(phase for phase in SAMPLE if _covers(ranges, phase))
        moment += step
    whole_intervals = (moment - start_us) // interval_us
    for phase in SAMPLE:  # each covered at least once per whole interval that passed
        assert counts[phase] >= whole_intervals
