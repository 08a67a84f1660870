"""Chaos runs through real workers, beat, PostgreSQL and Redis, with faults at seeded moments.

The quick tier (60 items, 6 faults) runs with the default suite; the long tier is ``make
chaos`` (``-m chaos``; size with ``OCC_TEST_CHAOS_ITEMS``, ``OCC_TEST_CHAOS_FAULTS``,
``OCC_TEST_CHAOS_DURATION_S``). ``OCC_TEST_CHAOS_SEED`` replays a run; the seed is always printed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.chaos import harness
from tests.support import older_release, shifted_clocks


def _seed() -> int:
    return int(os.environ.get("OCC_TEST_CHAOS_SEED") or random.SystemRandom().randrange(1, 10**6))


def _variant_run(
    tmp_path: Path, *, settle_s: float, worker_env: Mapping[str, Mapping[str, str]], variant: str
) -> harness.Figures:
    """A run of the long tier's variants, sized by ``OCC_TEST_CHAOS_VARIANT_ITEMS``,
    ``OCC_TEST_CHAOS_VARIANT_FAULTS`` and ``OCC_TEST_CHAOS_VARIANT_DURATION_S`` (120 items,
    12 faults, 60 s by default)."""
    return harness.run(
        tmp_path,
        seed=_seed(),
        items=int(os.environ.get("OCC_TEST_CHAOS_VARIANT_ITEMS", "120")),
        faults=int(os.environ.get("OCC_TEST_CHAOS_VARIANT_FAULTS", "12")),
        duration_s=float(os.environ.get("OCC_TEST_CHAOS_VARIANT_DURATION_S", "60")),
        settle_s=settle_s,
        worker_env=worker_env,
        variant=variant,
    )


def _skewed_run(tmp_path: Path, process: str, offset_s: int) -> harness.Figures:
    """A variant run whose fleet ``process`` reads a wall clock ``offset_s`` seconds off."""
    return _variant_run(
        tmp_path,
        settle_s=180.0,
        worker_env={process: shifted_clocks.environment(offset_s)},
        variant=f"{process}-clock{offset_s:+d}s",
    )


def _assert_clean(figures: harness.Figures) -> None:
    print(figures.line(), flush=True)
    for fault in figures.faults:
        print(f"  fault {fault.kind} {fault.target} [{fault.started_at:.2f}, {fault.ended_at:.2f}]")
    assert not figures.fault_errors, figures.fault_errors
    assert not figures.unexpected_exits, figures.unexpected_exits
    assert figures.report.violations() == {}, f"seed {figures.seed}: {figures.report.violations()}"
    assert len(figures.faults) > 0
    # the stale check knew most publishers from their workers' own events (a publisher killed
    # before it logged is judged by the journal's tokens)
    assert figures.report.publishers_named > 0


@pytest.mark.timeout(600)
def test_quick_chaos_run(tmp_path: Path) -> None:
    figures = harness.run(
        tmp_path, seed=_seed(), items=60, faults=6, duration_s=25.0, settle_s=120.0
    )
    _assert_clean(figures)


@pytest.mark.chaos
@pytest.mark.timeout(900)
@pytest.mark.parametrize("offset_s", [60, -60])
def test_chaos_with_the_control_worker_a_minute_off(tmp_path: Path, offset_s: int) -> None:
    """The control worker (which claims and dispatches) reads a wall clock a minute ahead or
    behind (libfaketime): no dispatch may be dropped or held for it, and no effect is
    journalled with a skewed clock."""
    figures = _skewed_run(tmp_path, "control", offset_s)
    _assert_clean(figures)
    assert set(figures.report.clock_offsets) == {0}, figures.report.clock_offsets


@pytest.mark.chaos
@pytest.mark.timeout(900)
@pytest.mark.parametrize("offset_s", [60, -60])
def test_chaos_with_a_driver_worker_a_minute_off(tmp_path: Path, offset_s: int) -> None:
    """``drivers-a`` (the driver worker the silent database cuts off) reads a wall clock a
    minute ahead or behind while its effects run, stop and are killed: leases are judged on the
    database clock and the worker's own monotonic clock, so nothing is lost or published stale.
    The checker places its journalled effects by their monotonic readings (``checker``), and
    the run must show that worker journalling effects with the offset it was given."""
    figures = _skewed_run(tmp_path, "drivers-a", offset_s)
    _assert_clean(figures)
    offsets = figures.report.clock_offsets
    assert set(offsets) == {0, offset_s} and offsets[offset_s] > 0, offsets


@pytest.mark.chaos
@pytest.mark.timeout(900)
def test_chaos_with_a_driver_worker_of_the_older_release(tmp_path: Path) -> None:
    """A rolling upgrade under faults: ``drivers-b`` reads payload version 1 only and defers
    every dispatch to ``drivers-a``, the new release's (docs/operations.md, Rolling upgrades)."""
    figures = _variant_run(
        tmp_path,
        settle_s=240.0,
        worker_env={"drivers-b": older_release.environment()},
        variant="drivers-b-older-release",
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
