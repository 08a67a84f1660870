"""Chaos runs through real workers, beat, PostgreSQL and Redis, with faults at seeded moments.

The quick tier (60 items, 6 faults) runs with the default suite; the long tier is ``make
chaos`` (``-m chaos``; size with ``OCC_TEST_CHAOS_ITEMS``, ``OCC_TEST_CHAOS_FAULTS``,
``OCC_TEST_CHAOS_DURATION_S``). ``OCC_TEST_CHAOS_SEED`` replays a run; the seed is always printed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.chaos import harness


def _seed() -> int:
    return int(os.environ.get("OCC_TEST_CHAOS_SEED") or random.SystemRandom().randrange(1, 10**6))


def _assert_clean(figures: harness.Figures) -> None:
    print(figures.line(), flush=True)
    for fault in figures.faults:
        print(f"  fault {fault.kind} {fault.target} [{fault.started_at:.2f}, {fault.ended_at:.2f}]")
    assert not figures.fault_errors, figures.fault_errors
    assert not figures.unexpected_exits, figures.unexpected_exits
    assert figures.report.violations() == {}, f"seed {figures.seed}: {figures.report.violations()}"
    assert len(figures.faults) > 0


@pytest.mark.timeout(600)
def test_quick_chaos_run(tmp_path: Path) -> None:
    figures = harness.run(
        tmp_path, seed=_seed(), items=60, faults=6, duration_s=25.0, settle_s=120.0
    )
    _assert_clean(figures)


@pytest.mark.chaos
@pytest.mark.timeout(7200)
def test_long_chaos_run(tmp_path: Path) -> None:
    figures = harness.run(
        tmp_path,
        seed=_seed(),
        items=int(os.environ.get("OCC_TEST_CHAOS_ITEMS", "400")),
        faults=int(os.environ.get("OCC_TEST_CHAOS_FAULTS", "56")),
        duration_s=float(os.environ.get("OCC_TEST_CHAOS_DURATION_S", "360")),
        settle_s=300.0,
    )
    _assert_clean(figures)
