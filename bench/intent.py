"""User intent ahead of upkeep, and history that stays flat (issue: priority classes and
retention), in one run on a scratch database:

* **pickup**: the p99 time from a deploy's admission to its claim, with 10,000 due repairs
  waiting against an idle queue, under the same in-process claim loop and runners;
* **days**: the work table's rows and size at the end of accelerated days (a day is as long
  as its work takes) of a steady fleet's work with retention on;
* **prune**: rows pruned per second, and the claim's p99 while a prune runs against the
  same claims without one, timed in alternating two-second slices;
* **health**: ``worker.health``'s pending count over a deep history against a shallow one.

Prints ``name=value`` figures on stdout and a summary with the targets on stderr.

    OCC_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
      PYTHONPATH=. .venv/bin/python bench/intent.py [--quick] [-v]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import multiprocessing.queues
import threading
import time
from collections.abc import Callable
from typing import Final

import sqlalchemy as sa

from bench import intent_workers, intent_world
from bench.support import log, percentile, report
from occ.reconcile import upkeep
from occ.state import values, work_claims, work_queue
from tests.support import queue_steps

POLICY: Final = values.QueuePolicy(
    lease_ms=60_000, dispatch_lease_ms=60_000, max_attempts=5, convergence_timeout_ms=3_600_000
)
IN_FLIGHT: Final = 16
"""The in-flight budget of the pickup phases (the claim loop claims a quarter at a time)."""
PASS_S: Final = 0.02
"""How long a simulated pass takes between its start and its completion."""
RUNNERS: Final = 4
REPAIRS: Final = 10_000
DEPLOY_EVERY_S: Final = 0.2
PICKUP_DEPLOYS: Final = 40
"""Deploys of one pickup phase; the phases alternate idle and behind the repairs."""
PICKUP_ROUNDS: Final = 4
PICKUP_ROUNDS_QUICK: Final = 2
PRUNE_SLICE_S: Final = 2.0
"""The claims are timed in turns: this long beside a prune, this long without one."""
DAYS: Final = 60
DAYS_QUICK: Final = 40
SETTLED_FROM: Final = 31
"""The first day judged for flatness: the failed items' 30 days of retention are full."""

# -- pickup -------------------------------------------------------------------------------


def pickup(w: intent_world.World, *, backlog: bool, deploys: int, verbose: bool) -> list[float]:
    """Deploys admitted every ``DEPLOY_EVERY_S`` while the claim loop and the runners work (with
    ``REPAIRS`` due repairs waiting, or none); each deploy's admission-to-claim time, in ms.

    The claim loop is a thread of this process, as in a control worker; the runners are
    processes of their own, as driver workers are (``intent_workers``)."""
    intent_world.empty_queue(w)
    if backlog:
        with w.owner.transaction() as session:
            queue_steps.queue_repairs(
                session, w.actor, w.repair_revisions, per_lane=REPAIRS // intent_world.REPAIR_LANES
            )
        intent_world.vacuum(w)
    claimed: multiprocessing.queues.Queue[values.Claim | None] = intent_workers.CONTEXT.Queue()
    nudged = intent_workers.CONTEXT.Event()
    waits: list[float] = []
    admitted: set[str] = set()
    stop = threading.Event()

    def claim_loop() -> None:
        while not stop.is_set():
            nudged.wait(0.05)  # the nudge of an admission or a completion, else beat's tick
            nudged.clear()
            with w.app.transaction() as session:
                batch = work_claims.claim_share(
                    session, POLICY, max_in_flight=IN_FLIGHT, min_room=IN_FLIGHT // 4
                )
            for claim in batch.claims:
                if claim.work_id in admitted:
                    waits.append((claim.claimed_at - claim.created_at).total_seconds() * 1000)
                claimed.put(claim)
            if batch.more:
                nudged.set()

    runners = [
        intent_workers.CONTEXT.Process(
            target=intent_workers.run_claims,
            args=(w.urls.app, POLICY, claimed, nudged, PASS_S),
            daemon=True,
        )
        for _ in range(RUNNERS)
    ]
    for runner in runners:
        runner.start()
    loop = threading.Thread(target=claim_loop)
    loop.start()
    try:
        time.sleep(2.0)  # the runners started and the loop at its steady state first
        for n in range(deploys):
            agent_id = w.deploy_agents[n % len(w.deploy_agents)]
            number = w.numbers[agent_id] = w.numbers.get(agent_id, 0) + 1
            with w.app.transaction() as session:
                admitted.add(
                    queue_steps.enqueue_revision(session, w.namespace_id, agent_id, w.actor, number)
                )
            nudged.set()
            time.sleep(DEPLOY_EVERY_S)
        deadline = time.monotonic() + 30
        while len(waits) < deploys and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        loop.join()
        for _ in runners:
            claimed.put(None)
        for runner in runners:
            runner.join(timeout=30)
    with w.app.snapshot() as session:
        left = work_queue.pending(session)
    log(verbose, f"pickup backlog={backlog}: {len(waits)} deploys claimed, {left} pending after")
    return waits


# -- accelerated days ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Day:
    """The work table at the end of an accelerated day."""

    day: int
    rows: int
    heap_bytes: int
    """The table's own pages (its TOAST included)."""
    index_bytes: int
    """Its indexes' pages."""


def days(w: intent_world.World, *, count: int, per_day: int, verbose: bool) -> list[Day]:
    """``count`` accelerated days, each ending ``per_day`` items (one in 20 failed) and then
    pruned with the default retention (7 days succeeded, 30 failed) counted in these days,
    then vacuumed as autovacuum would; the work table at the end of each day.

    A day is as long as its work takes, and its items finish at its start: the prune's ages
    reach back, on the database clock, to between day N - 7 (N - 30) and the day after it, so
    day N removes exactly what ended on day N - 7 (N - 30) and before."""
    intent_world.empty_queue(w)
    intent_world.vacuum(w)
    never = 10**12
    starts: dict[int, dt.datetime] = {}
    sizes = []
    for day in range(1, count + 1):
        with w.owner.transaction() as session:
            starts[day] = work_queue.database_now(session)
            intent_world.finish(session, w, first=day * per_day, count=per_day, ended=starts[day])
            now = work_queue.database_now(session)
        ages = {}
        for kept_days in (7, 30):
            # halfway between the first day kept and the day before it: the prune's cutoff,
            # which moves on with the clock while it runs, stays between the two days
            kept, gone = starts.get(day - kept_days + 1), starts.get(day - kept_days)
            ages[kept_days] = (
                never
                if kept is None or gone is None
                else int((now - (gone + (kept - gone) / 2)).total_seconds() * 1000)
            )
        keep = upkeep.Retention(succeeded_ms=ages[7], failed_ms=ages[30], idempotency_ms=never)
        # without rests: an accelerated day is shorter than a paced prune, whose cutoff, moving
        # on with the clock, would pass the next day's items (the rests are the prune phase's)
        upkeep.prune(w.app, keep, budget_s=60, pause=0)
        intent_world.vacuum(w)
        with w.owner.transaction() as session:
            found = session.execute(
                sa.text(
                    "SELECT count(*), pg_table_size('occ.controller_work'),"
                    " pg_indexes_size('occ.controller_work') FROM occ.controller_work"
                )
            ).one()
        sizes.append(Day(day, int(found[0]), int(found[1]), int(found[2])))
        log(
            verbose,
            f"day {day}: {found[0]} rows, table {found[1] / 1e6:.1f} MB, "
            f"indexes {found[2] / 1e6:.1f} MB",
        )
    return sizes


# -- prune beside the claim ---------------------------------------------------------------


def _claim_latencies(w: intent_world.World, until: Callable[[], bool]) -> list[float]:
    """``claim(limit=10)`` timed again and again (each batch released) until ``until()``."""
    samples = []
    while not until():
        with w.app.transaction() as session:
            started = time.perf_counter()
            claims = work_claims.claim(session, POLICY, limit=10)
            samples.append((time.perf_counter() - started) * 1000)
        with w.app.autocommit_connection() as connection:
            for claim in claims:
                work_queue.release(connection, claim)
    return samples


def prune_beside_claims(
    w: intent_world.World, *, history: int, slice_s: float, verbose: bool
) -> tuple[float, list[float], list[float]]:
    """``history`` expired terminal rows and 3,000 queued items: the claim's latencies in
    alternating slices of ``slice_s``, without a prune and with one (a run whose budget is the
    slice, in a process of its own as beat's prune task is), until the history is gone, so
    that a noisy stretch of the machine falls on both; the prune's rows per second of its own
    slices."""
    intent_world.history_beside_queue(
        w, first=10_000_000, count=history, ended=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    )
    keep = upkeep.Retention(succeeded_ms=60_000, failed_ms=60_000)

    def for_slice() -> Callable[[], bool]:
        end = time.monotonic() + slice_s
        return lambda: time.monotonic() >= end

    pruner = intent_workers.Pruner(w.urls.app)
    try:
        _claim_latencies(w, for_slice())  # warm-up: the prepared plan settles
        quiet: list[float] = []
        during: list[float] = []
        pruned, pruning_s = 0, 0.0
        while True:
            quiet += _claim_latencies(w, for_slice())
            pruner.start(keep, slice_s)
            during += _claim_latencies(w, lambda: not pruner.running())
            report, took_s = pruner.result()
            pruned, pruning_s = pruned + report.work, pruning_s + took_s
            if report.finished:
                break
        quiet += _claim_latencies(w, for_slice())
    finally:
        pruner.close()
    log(verbose, f"prune: {pruned} rows in {pruning_s:.1f} s of pruning slices")
    return pruned / pruning_s, quiet, during


# -- health -------------------------------------------------------------------------------


def health_ms(w: intent_world.World, *, history: int, samples: int = 50) -> tuple[float, float]:
    """The median ``worker.health`` count (``work_queue.pending``) over ``history`` finished
    rows and 3,000 queued, in ms; and the work table's bytes per row with its indexes."""
    intent_world.history_beside_queue(
        w, first=20_000_000, count=history, ended=dt.datetime.now(dt.UTC)
    )
    timings = []
    with w.app.snapshot() as session:
        for _ in range(samples):
            started = time.perf_counter()
            work_queue.pending(session)
            timings.append((time.perf_counter() - started) * 1000)
    with w.owner.transaction() as session:
        size = session.execute(
            sa.text("SELECT pg_total_relation_size('occ.controller_work')")
        ).scalar_one()
    return percentile(timings, 0.5), size / (history + 3_000)


def measure(*, quick: bool, verbose: bool) -> tuple[dict[str, float], list[str]]:
    """Every phase's figures, and a summary line per target (``bench/fleet.py`` prints them
    too)."""
    figures: dict[str, float] = {}
    with intent_world.world(verbose) as w:
        idle: list[float] = []
        busy: list[float] = []
        for _ in range(PICKUP_ROUNDS_QUICK if quick else PICKUP_ROUNDS):
            # side by side, in turns: a noisy moment of the machine falls on both
            idle += pickup(w, backlog=False, deploys=PICKUP_DEPLOYS, verbose=verbose)
            busy += pickup(w, backlog=True, deploys=PICKUP_DEPLOYS, verbose=verbose)
        figures["pickup_deploys_each"] = len(busy)
        figures["pickup_p99_ms_idle"] = percentile(idle, 0.99)
        figures["pickup_p99_ms_10k_repairs"] = percentile(busy, 0.99)

        sizes = days(w, count=DAYS_QUICK if quick else DAYS, per_day=2_000, verbose=verbose)
        first, last = next(d for d in sizes if d.day == SETTLED_FROM), sizes[-1]
        figures["day31_work_rows"], figures["last_day_work_rows"] = first.rows, last.rows
        figures["day31_work_table_mb"] = first.heap_bytes / 1e6
        figures["last_day_work_table_mb"] = last.heap_bytes / 1e6
        figures["day31_work_indexes_mb"] = first.index_bytes / 1e6
        figures["last_day_work_indexes_mb"] = last.index_bytes / 1e6

        rate, quiet, pruning = prune_beside_claims(
            w, history=100_000 if quick else 300_000, slice_s=PRUNE_SLICE_S, verbose=verbose
        )
        figures["prune_rows_per_s"] = rate
        figures["claim_p99_ms_quiet"] = percentile(quiet, 0.99)
        figures["claim_p99_ms_pruning"] = percentile(pruning, 0.99)

        shallow, _ = health_ms(w, history=10_000)
        deep_rows = 1_000_000 if quick else 5_000_000
        deep, row_bytes = health_ms(w, history=deep_rows)
        figures["health_ms_10k_finished"] = shallow
        figures[f"health_ms_{deep_rows // 1_000_000}m_finished"] = deep
        figures["work_bytes_per_row"] = row_bytes

    pickup_ratio = figures["pickup_p99_ms_10k_repairs"] / figures["pickup_p99_ms_idle"]
    flat = figures["last_day_work_rows"] / figures["day31_work_rows"]
    flat_mb = figures["last_day_work_table_mb"] / figures["day31_work_table_mb"]
    indexes = figures["last_day_work_indexes_mb"] / figures["day31_work_indexes_mb"]
    claim_ratio = figures["claim_p99_ms_pruning"] / figures["claim_p99_ms_quiet"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    return figures, [
        f"deploy pickup p99 with {REPAIRS:,} repairs waiting / idle: {pickup_ratio:.2f}x "
        f"(target <= 2x: {verdict(pickup_ratio <= 2)})",
        f"work table, day {last.day} / day {SETTLED_FROM}: rows {flat:.2f}x, table "
        f"{flat_mb:.2f}x (target flat: {verdict(flat <= 1.05 and flat_mb <= 1.05)}); its "
        f"indexes {indexes:.2f}x (reported: B-tree pages the prune half empties are reused, "
        "never merged)",
        f"prune {figures['prune_rows_per_s']:.0f} rows/s; claim p99 while pruning / quiet: "
        f"{claim_ratio:.2f}x (target <= 1.2x: {verdict(claim_ratio <= 1.2)})",
        f"health count over {deep_rows:,} finished rows: {deep:.2f} ms (10k: {shallow:.2f} ms;"
        f" target < 10 ms: {verdict(deep < 10)})",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="User intent ahead of upkeep; flat history.")
    parser.add_argument("--quick", action="store_true", help="smaller history, fewer days")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    figures, summary = measure(quick=args.quick, verbose=args.verbose)
    report(figures, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
