"""Benchmark of the work queue (``occ.state.work_queue``): prints ``name=value`` figures.

Not a test: it asserts nothing, it measures. ``OCC_TEST_DATABASE_URL`` names an empty database
the benchmark owns (created if missing, migrated with ``occ.state.schema.upgrade``, emptied with
TRUNCATE between phases, all as the URL's user). stdout gets exactly these lines::

    batch1_items_per_s        no-op items/s, batch-1 claims, 100 lanes
    batch50_items_per_s       no-op items/s, batch-50 claims, 100 lanes
    claim_p50_ms_1k           one claim statement (limit 10), 1,000 terminal rows in the table
    claim_p99_ms_1k
    claim_p50_ms_1m           the same with 1,000,000 terminal rows (skipped by --quick)
    claim_p99_ms_1m
    claim_p99_ms_1k_queued    one claim statement with 1,000 queued items over 1,000 lanes
    claim_p99_ms_100k_queued  the same with 100,000 queued items (a ratio of about 1: flat)
    own_lane_items_per_s      batch-50 items/s, every item in its own lane
    shared_lanes_items_per_s  batch-50 items/s, the same number of items over 1,000 lanes

stderr gets a short summary: the ratios, the targets, and a baseline measured in the same run
(``baseline_update_commits_per_s``: one client committing a plain single-row UPDATE through the
same ``Database`` stack, sampled right before and right after every throughput phase), so runs on
different machines or under different load can be compared as ratios: each phase's ratio is
against the mean of its own two samples, which bracket it.

An item is processed the way a driver task processes it: the claim transaction hands out a
batch of dispatch claims, then each item gets its own start (``work_queue.start`` exchanges the
dispatch token for a run token) and its own completion (``work_queue.complete``, which writes
the audit evidence row in the same statement), each one statement on an autocommit connection
(``Database.autocommit_connection``: no BEGIN or COMMIT round trip, no session). So one item
costs two commits plus its share of one claim commit. ``WORKERS`` worker processes (4, on a
2-core machine, like a prefork pool) each loop: claim tx (batch) ; per item: start ; complete
(autocommit). They connect as the URL's user through ``occ.state.db.Database``, the stack the
workers use. The work is Agent-revision work
(``agent_revision:<rev>:reconcile``); its lane is the Agent, so many revisions of one Agent are
many items in one lane. Rows are set up with bulk INSERT ... SELECT
statements, then VACUUM ANALYZE (and CHECKPOINT when the user may).

Claim latency: 3,000 queued items over 1,000 lanes, 64 live claims (busy lanes), and 1,000 or
1,000,000 succeeded rows (one INSERT ... SELECT generate_series). One thread times
``work_claims.claim(limit=10)`` (the statement and its rows, not BEGIN or COMMIT) after a
warm-up, so the figures are those of the prepared statement's steady-state plan; each claimed
batch is then released, which keeps every count constant from sample to sample.

Backlog depth: the same claim over 1,000 and over 100,000 queued items (1,000 lanes, 64 live
claims, no terminal rows), set up in two databases at once (the URL's and the URL's name with
``_deep`` appended) and sampled alternately, one claim in each, so both figures see the same
moments of the machine's other load.

The phases run in the order batch1, batch50, latency 1k (half), 1m, 1k (other half), depth,
own, shared, shared, own: each pair that forms a ratio brackets the other, so a drift in other load
on the machine during the run moves both sides alike. A full run takes about 4 to 5 minutes on
2 cores (a minute of it inserting the million rows); ``--quick`` about a minute.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bench import queue_throughput, queue_world
from bench.support import figure, log, percentile, say
from occ.state import db, values, work_claims, work_queue

BATCH_LANES = 100
SHARED_LANES = 1_000
LATENCY_LANES = 1_000
LATENCY_QUEUED = 3_000
TARGET_DEPTH_RATIO = 1.2
"""A claim over 100,000 queued items may cost at most this much more than over 1,000."""
LATENCY_LIMIT = 10
LATENCY_IN_FLIGHT = 64
"""Claims held live while claim latency is measured (``OCC_MAX_IN_FLIGHT``): busy lanes."""

POLICY = values.QueuePolicy()
HOLD_POLICY = values.QueuePolicy(dispatch_lease_ms=3_600_000)

TARGET_BATCH50_PER_BASELINE = 0.8
"""batch50 items/s per baseline commit/s (sampled around the batch50 phase) at the least."""
TARGET_P99_RATIO = 1.2
TARGET_SHARED_RATIO = 0.8


@dataclass(frozen=True)
class Plan:
    """How long and how big each phase is (``--quick`` shrinks it)."""

    warmup_s: float
    measure_s: float
    batch1_items: int
    batch50_items: int
    latency_samples: int
    latency_warmup: int
    baseline_s: float
    million: bool


FULL = Plan(
    warmup_s=2.0,
    measure_s=10.0,
    batch1_items=12_000,
    batch50_items=30_000,
    latency_samples=2_000,
    latency_warmup=200,
    baseline_s=1.5,
    million=True,
)
QUICK = Plan(
    warmup_s=1.0,
    measure_s=4.0,
    batch1_items=6_000,
    batch50_items=15_000,
    latency_samples=600,
    latency_warmup=100,
    baseline_s=1.0,
    million=False,
)


# -- claim latency ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p99_ms: float

    @classmethod
    def of(cls, timings_ms: list[float]) -> Latency:
        return cls(percentile(timings_ms, 0.50), percentile(timings_ms, 0.99))


class ClaimSampler:
    """A queue set up for timing one claim statement (limit 10), in the database of ``url``.

    It holds ``queued`` queued items over ``LATENCY_LANES`` lanes, ``LATENCY_IN_FLIGHT`` live
    claims (their lanes are busy) and ``terminal`` succeeded rows. After each timed claim its
    items are released (queued again at the back, attempt refunded), so the queued, claimed and
    terminal counts stay what they were set up to be for every sample.
    """

    def __init__(self, url: str, engine: sa.Engine, *, queued: int, terminal: int) -> None:
        queue_world.empty(engine)
        queue_world.populate(
            engine, agents=LATENCY_LANES, revisions=queued // LATENCY_LANES, terminal=terminal
        )
        queue_world.settle(engine)
        self.engine = engine
        self.label = f"{queued} queued, {terminal} terminal rows"
        self.database = db.Database(url, pool_size=2, application_name="occ-bench")
        with self.database.transaction() as session:
            work_claims.claim(session, HOLD_POLICY, limit=LATENCY_IN_FLIGHT)

    def sample(self) -> float:
        """Milliseconds of one claim statement and its rows (not BEGIN or COMMIT)."""
        with self.database.transaction() as session:
            session.execute(sa.text("SELECT 1"))  # BEGIN goes out here, outside the timing
            before = time.perf_counter()
            claims = work_claims.claim(session, POLICY, limit=LATENCY_LIMIT)
            elapsed = time.perf_counter() - before
        with self.database.transaction() as session:
            for dispatch in claims:
                work_queue.release(session, dispatch)
        return elapsed * 1000

    def close(self) -> None:
        self.database.dispose()
        queue_world.empty(self.engine)


def latency_phase(
    url: str,
    engine: sa.Engine,
    plan: Plan,
    *,
    terminal: int,
    samples: int,
    verbose: bool,
) -> list[float]:
    """Time ``samples`` claims beside ``terminal`` succeeded rows (``LATENCY_QUEUED`` queued),
    after a warm-up. Returns milliseconds."""
    started = time.perf_counter()
    sampler = ClaimSampler(url, engine, queued=LATENCY_QUEUED, terminal=terminal)
    log(verbose, f"set up {sampler.label} in {time.perf_counter() - started:.1f} s")
    gc.collect()
    timings = [sampler.sample() for _ in range(plan.latency_warmup + samples)]
    sampler.close()
    timings = timings[plan.latency_warmup :]
    log(verbose, f"claim latency, {sampler.label}: {Latency.of(timings)}")
    return timings


def depth_phase(url: str, plan: Plan, *, verbose: bool) -> tuple[list[float], list[float]]:
    """Claim latency over 1,000 and over 100,000 queued items, sample by sample side by side.

    The two queues live in two databases of the same server (the deep one is the URL's name
    with ``_deep`` appended, created and migrated like the first); the samples alternate
    between them (and which goes first), so a drift in the machine's other load moves both
    figures alike. Returns the shallow and the deep milliseconds.
    """
    target = make_url(db.normalize_url(url))
    deep_url = target.set(database=f"{target.database}_deep").render_as_string(hide_password=False)
    queue_world.ensure_database(deep_url)
    engines = queue_world.admin_engine(url), queue_world.admin_engine(deep_url)
    shallow = ClaimSampler(url, engines[0], queued=1_000, terminal=0)
    deep = ClaimSampler(deep_url, engines[1], queued=100_000, terminal=0)
    timings: dict[ClaimSampler, list[float]] = {shallow: [], deep: []}
    gc.collect()
    for sample in range(plan.latency_warmup + plan.latency_samples):
        for sampler in (shallow, deep) if sample % 2 else (deep, shallow):
            elapsed = sampler.sample()
            if sample >= plan.latency_warmup:
                timings[sampler].append(elapsed)
    for sampler in (shallow, deep):
        sampler.close()
        log(verbose, f"claim latency, {sampler.label}: {Latency.of(timings[sampler])}")
    for engine in engines:
        engine.dispose()
    return timings[shallow], timings[deep]


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="shorter phases, no million-row phase (no _1m lines)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    parser.add_argument(
        "--recreate",
        action="store_true",
        help="drop and create the database first (after a migration was edited)",
    )
    args = parser.parse_args(argv)
    url = os.environ.get("OCC_TEST_DATABASE_URL")
    if not url:
        print("set OCC_TEST_DATABASE_URL to the benchmark's database", file=sys.stderr)
        return 2
    plan = QUICK if args.quick else FULL
    verbose: bool = args.verbose
    began = time.perf_counter()

    queue_world.ensure_database(url, recreate=args.recreate)
    engine = queue_world.admin_engine(url)
    queue_world.empty(engine)
    baseline = queue_throughput.Baseline(url, engine, plan.baseline_s)

    def throughput(
        *, lanes: int, items: int, batch: int, measure_s: float
    ) -> queue_throughput.Throughput:
        return queue_throughput.throughput_phase(
            url,
            engine,
            baseline,
            plan.warmup_s,
            lanes=lanes,
            items=items,
            batch=batch,
            measure_s=measure_s,
            verbose=verbose,
        )

    def latency(terminal: int, samples: int) -> list[float]:
        return latency_phase(url, engine, plan, terminal=terminal, samples=samples, verbose=verbose)

    batch1 = throughput(
        lanes=BATCH_LANES, items=plan.batch1_items, batch=1, measure_s=plan.measure_s
    )
    figure("batch1_items_per_s", batch1.items_per_s, 0)
    batch50 = throughput(
        lanes=BATCH_LANES, items=plan.batch50_items, batch=50, measure_s=plan.measure_s
    )
    figure("batch50_items_per_s", batch50.items_per_s, 0)

    # 1k, 1m, 1k again: the two 1k halves bracket the 1m phase, so a drift in the machine's
    # other load during the run moves both figures alike instead of skewing their ratio.
    if plan.million:
        half = plan.latency_samples // 2
        first = latency(1_000, half)
        million = Latency.of(latency(1_000_000, plan.latency_samples))
        small = Latency.of(first + latency(1_000, plan.latency_samples - half))
    else:
        small = Latency.of(latency(1_000, plan.latency_samples))
    figure("claim_p50_ms_1k", small.p50_ms, 3)
    figure("claim_p99_ms_1k", small.p99_ms, 3)
    if plan.million:
        figure("claim_p50_ms_1m", million.p50_ms, 3)
        figure("claim_p99_ms_1m", million.p99_ms, 3)

    # backlog depth: 1,000 and 100,000 queued items, their samples interleaved
    shallow_timings, deep_timings = depth_phase(url, plan, verbose=verbose)
    shallow, deep = Latency.of(shallow_timings), Latency.of(deep_timings)
    figure("claim_p99_ms_1k_queued", shallow.p99_ms, 3)
    figure("claim_p99_ms_100k_queued", deep.p99_ms, 3)

    # own, shared, shared, own: the same bracketing for their ratio.
    slice_s = plan.measure_s
    own = throughput(
        lanes=plan.batch50_items, items=plan.batch50_items, batch=50, measure_s=slice_s
    )
    shared = throughput(lanes=SHARED_LANES, items=plan.batch50_items, batch=50, measure_s=slice_s)
    shared += throughput(lanes=SHARED_LANES, items=plan.batch50_items, batch=50, measure_s=slice_s)
    own += throughput(
        lanes=plan.batch50_items, items=plan.batch50_items, batch=50, measure_s=slice_s
    )
    figure("own_lane_items_per_s", own.items_per_s, 0)
    figure("shared_lanes_items_per_s", shared.items_per_s, 0)
    baseline.close()
    queue_world.empty(engine)
    engine.dispose()

    runs = {"batch1": batch1, "batch50": batch50, "own_lane": own, "shared_lanes": shared}
    phase_counters = sum((r.counters for r in runs.values()), queue_throughput.Counters())
    shared_ratio = shared.items_per_s / own.items_per_s
    batch50_ratio = batch50.items_per_s / batch50.baseline
    low, high = min(baseline.samples), max(baseline.samples)

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines = [
        f"baseline_update_commits_per_s={baseline.mean:.0f}",
        f"baseline over the run: {low:.0f}..{high:.0f} commits/s in {len(baseline.samples)} "
        "samples (a wide range: other load moved the figures)",
        f"{queue_throughput.WORKERS} worker processes on {os.cpu_count()} cores;"
        " per item: start ; complete (autocommit)",
        "items/s per baseline commit/s sampled around each phase: "
        + ", ".join(f"{name} {r.items_per_s / r.baseline:.2f}" for name, r in runs.items()),
        f"batch50/baseline = {batch50_ratio:.2f} (target >= {TARGET_BATCH50_PER_BASELINE}: "
        f"{verdict(batch50_ratio >= TARGET_BATCH50_PER_BASELINE)}); "
        f"batch50/batch1 = {batch50.items_per_s / batch1.items_per_s:.2f}",
        f"shared/own = {shared_ratio:.2f} (target >= {TARGET_SHARED_RATIO}: "
        f"{verdict(shared_ratio >= TARGET_SHARED_RATIO)})",
    ]
    if plan.million:
        p99_ratio = million.p99_ms / small.p99_ms
        lines.append(
            f"claim p99 1m/1k = {p99_ratio:.2f}, p50 1m/1k = {million.p50_ms / small.p50_ms:.2f}"
            f" (target <= {TARGET_P99_RATIO}: {verdict(p99_ratio <= TARGET_P99_RATIO)})"
        )
    depth_ratio = deep.p99_ms / shallow.p99_ms
    lines.append(
        f"claim p99 100k/1k queued = {depth_ratio:.2f} (target <= {TARGET_DEPTH_RATIO}: "
        f"{verdict(depth_ratio <= TARGET_DEPTH_RATIO)})"
    )
    lines.append(
        f"empty claims {phase_counters.empty_claims} of {phase_counters.claims}; unique "
        f"violations {phase_counters.unique_violations}; spent starts "
        f"{phase_counters.spent_starts}; elapsed {time.perf_counter() - began:.0f} s"
    )
    for line in lines:
        say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
