"""End-to-end benchmark of the worker fleet: Celery worker and beat processes, PostgreSQL, Redis.

Not a test: it asserts nothing, it measures. stdout gets exactly these lines::

    occ_items_per_s       no-op Namespace work items/s: claim -> run_work -> complete
    celery_tasks_per_s    plain Celery no-op tasks/s, same broker and worker settings
    pickup_p50_ms_nudge   admission commit -> effect start, API nudge after each admission
    pickup_p99_ms_nudge
    pickup_p50_ms_poll    the same without the nudge: beat claims every 250 ms
    pickup_p99_ms_poll

stderr gets a human summary (occ/celery ratio, nudge/poll ratios, the targets) and, with
``-v``, progress lines.

Set-up: ``OCC_TEST_DATABASE_URL`` names a PostgreSQL *server*; the benchmark creates its own
fresh, migrated database there (``tests.support.databases``), bootstraps an Installation and
drops the database at the end. The broker is the first quiet database of 12 to 15 (no client
connected, empty: a parallel run's is not) of the Redis named by
``OCC_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``), flushed before and after.
Processes are started the way the runtime tests start them (``python -m celery``, one session
each, a readiness marker per worker) and all stopped at the end (their process groups killed
on failure).

Throughput: one control worker (``-Q occ.control -P threads -c 2``) and two driver worker
processes (``-Q occ.drivers -P prefork -c 1``, twice), no beat. N Namespaces are admitted
through ``occ.controller.namespaces.create_namespace`` (the local Compute Driver's ensure is a
mkdir: effectively a no-op), then one nudge (``occ.claim``) is sent and the clock runs until
all N are ``ready`` (the database is polled every 20 ms). The items are the Namespaces' work
rows ``namespace:<id>:reconcile:ready``: each is claimed, dispatched as ``occ.run_work``,
started (dispatch token for run token), reconciled under a ``ClaimContext`` and completed with
its audit row; every finished ``run_work`` nudges the next claim. A warm-up batch runs first.

Baseline: ``bench/noop_app.py`` is a plain Celery app built with the same
``occ.tasks.app._configuration(settings)`` and one no-op task on its own queue, run by two
prefork worker processes with ``-c 1`` and the same flags. Each task INCRs a Redis counter
(there is no result backend); the clock runs from the first publish until the counter reaches
the count. Its workers start before occ's throughput run and run N/2 tasks right before it
and the other half right after it (``celery_tasks_per_s`` is their total over both times), so a
drift in the machine's other load during the run moves both sides of the ratio alike. Target:
``occ_items_per_s`` at least a quarter of ``celery_tasks_per_s``.

Pickup latency: the time from an admission's commit (``time.time()`` taken in this process
right after ``create_namespace`` returns) to the ``started`` line of its effect in the local
driver's journal (``<OCC_LOCAL_ROOT>/effects.jsonl``, ``startedAt`` in epoch seconds, written
by the driver worker on the same machine). Samples are admitted one by one, 20 to 50 ms
apart. With the nudge: ``Nudger.send_now()`` after each commit (what the API does), beat
claiming only every 60 s. Without it: beat claims every 250 ms (the reference system's poll).
The fleet's own nudges stay on in both runs: a finished ``run_work`` still nudges a claim, so
an admission that lands while another item runs can be picked up before the next beat tick.
Target with the nudge: p99 under 50 ms. Before each pickup run the ``occ.claim`` messages
still queued from the previous phase are dropped (every Namespace is ready by then, so they
could claim nothing) and the fleet is left to become idle; ``-v`` says how many there were.

``--control-pool prefork`` runs the control worker with the prefork pool instead of threads
(a comparison: the threads pool with ``worker_disable_prefetch`` stops fetching once both
threads are busy and resumes only at the worker's next event-loop wake-up, up to 1 s later).
``-v`` also prints, per phase, the CPU time each role spent per item (worker processes and
their pool children, the workers' PostgreSQL backends, Redis, this process; from /proc) and
the driver processes' busy share from their ``worker.completed`` events.

A run with the defaults (``--items 500 --samples 200``) takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from bench import e2e_installation, plain_celery, process_cpu
from bench.e2e_installation import READY_TIMEOUT_S
from bench.support import BenchError, log, percentile, report
from bench.workers import (
    CLAIM_INTERVAL_MS,
    OCC_APP,
    Fleet,
    driver_durations,
    exit_on_sigterm,
    fleet_env,
    scratch,
)
from occ.controller import installation
from occ.drivers.compute.local import LocalComputeDriver
from occ.settings.config import Settings
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import nudge
from tests.support import brokers, databases

BROKER_DBS: Final = (12, 13, 14, 15)
"""Redis databases the broker may use: the first one no other client is connected to."""
WARMUP_ITEMS: Final = 20
NUDGE_BEAT_MS: Final = CLAIM_INTERVAL_MS
POLL_BEAT_MS: Final = 250
SPACING_S: Final = (0.02, 0.05)

TARGET_RATIO: Final = 0.25
TARGET_NUDGE_P99_MS: Final = 50.0


# -- the occ side ----------------------------------------------------------------------------


def occ_throughput(
    occ: e2e_installation.Occ, fleet: Fleet, broker: redis.Redis, items: int, verbose: bool
) -> float:
    warm = [occ.admit() for _ in range(WARMUP_ITEMS)]
    occ.nudger.send_now()
    occ.wait_ready(len(warm), timeout=READY_TIMEOUT_S, fleet=fleet)
    log(verbose, f"occ warm-up: {len(warm)} items ready")
    e2e_installation.quiesce(occ, broker, verbose, "the throughput run")

    started = time.perf_counter()
    ids = [occ.admit() for _ in range(items)]
    admitted_in = time.perf_counter() - started
    before = occ.counts().get("ready", 0) - len(warm)
    log(
        verbose,
        f"admitted {items} Namespaces in {admitted_in:.2f} s "
        f"({items / admitted_in:.0f}/s); ready before the nudge: {before}",
    )

    groups = {
        role: pids
        for role, pids in e2e_installation.cpu_groups(fleet, occ, broker).items()
        if role != "noop"
    }
    cpu_before = process_cpu.snapshot(groups)
    begin = time.monotonic()
    occ.nudger.send_now()
    end = occ.wait_ready(len(warm) + items, timeout=max(READY_TIMEOUT_S, items / 5), fleet=fleet)
    elapsed = end - begin
    cpu_after = process_cpu.snapshot(groups)
    log(verbose, f"occ: {items} items ready {elapsed:.2f} s after the nudge")
    log(verbose, f"occ: {process_cpu.report(cpu_before, cpu_after, items, elapsed)}")
    durations = driver_durations(fleet, {e2e_installation.work_id(i) for i in ids})
    if durations:
        log(
            verbose,
            f"occ: run_work (executor.run) mean {statistics.fmean(durations):.1f} ms, "
            f"p50 {percentile(durations, 0.5):.1f} ms over {len(durations)} items; "
            f"driver processes busy {sum(durations) / 1000 / (2 * elapsed):.0%} "
            f"of the measured time",
        )
    return items / elapsed


def pickup_latencies(
    occ: e2e_installation.Occ,
    fleet: Fleet,
    broker: redis.Redis,
    local_root: Path,
    *,
    samples: int,
    with_nudge: bool,
    verbose: bool,
) -> list[float]:
    """Milliseconds from each admission's commit to the start of its effect."""
    label = "nudge" if with_nudge else "poll"
    e2e_installation.quiesce(occ, broker, verbose, f"the pickup run ({label})")
    beat = fleet.beat(f"beat-{label}", NUDGE_BEAT_MS if with_nudge else POLL_BEAT_MS)
    total = occ.counts().get("ready", 0)
    # warm-up: one admission picked up by the nudge, or (without it) by a running beat
    occ.admit()
    if with_nudge:
        occ.nudger.send_now()
    total += 1
    occ.wait_ready(total, timeout=READY_TIMEOUT_S, fleet=fleet)

    spacing = random.Random(4)
    admitted: dict[str, float] = {}
    for _ in range(samples):
        namespace_id = occ.admit()
        admitted[e2e_installation.work_id(namespace_id)] = time.time()
        if with_nudge:
            occ.nudger.send_now()
        time.sleep(spacing.uniform(*SPACING_S))
    occ.wait_ready(total + samples, timeout=READY_TIMEOUT_S, fleet=fleet)
    fleet.stop(beat)

    first_start: dict[str, float] = {}
    for effect in LocalComputeDriver(local_root).effects():
        if effect["phase"] == "started":
            first_start.setdefault(str(effect["workId"]), float(effect["startedAt"]))
    missing = [w for w in admitted if w not in first_start]
    if missing:
        raise BenchError(f"{len(missing)} admitted items have no effect in the journal")
    latencies = [(first_start[w] - t) * 1000 for w, t in admitted.items()]
    log(
        verbose,
        f"pickup ({label}): {samples} samples, min {min(latencies):.1f} ms, "
        f"max {max(latencies):.1f} ms",
    )
    return latencies


def bracketed_throughputs(
    occ: e2e_installation.Occ,
    env: dict[str, str],
    fleet: Fleet,
    counter: redis.Redis,
    items: int,
    verbose: bool,
) -> tuple[float, float]:
    """occ's items/s and plain Celery's tasks/s, Celery's run split in two halves that bracket
    occ's (a drift in the machine's other load during the run moves both sides alike)."""
    celery = plain_celery.PlainCelery(
        env, fleet, counter, warmup_items=WARMUP_ITEMS, timeout_s=READY_TIMEOUT_S
    )
    try:
        first = items // 2 or 1
        second = max(items - first, 1)
        before, cpu_before = celery.run(first)
        occ_per_s = occ_throughput(occ, fleet, counter, items, verbose)
        after, cpu_after = celery.run(second)
    finally:
        celery.close()
    log(
        verbose,
        f"plain Celery: {first} tasks in {before:.2f} s before occ's run, {second} in "
        f"{after:.2f} s after it",
    )
    log(verbose, f"plain Celery, before: {cpu_before}")
    log(verbose, f"plain Celery, after: {cpu_after}")
    return occ_per_s, (first + second) / (before + after)


# -- main -------------------------------------------------------------------------------------


def broker_url() -> str:
    number = brokers.quiet_database(BROKER_DBS)
    if number is None:
        raise BenchError(f"every Redis database of {BROKER_DBS} is in use")
    return brokers.url(number)


def summary(figures: dict[str, float]) -> list[str]:
    ratio = figures["occ_items_per_s"] / figures["celery_tasks_per_s"]
    p50 = figures["pickup_p50_ms_nudge"] / figures["pickup_p50_ms_poll"]
    p99 = figures["pickup_p99_ms_nudge"] / figures["pickup_p99_ms_poll"]
    met = {True: "met", False: "MISSED"}
    return [
        f"occ / plain Celery throughput: {ratio:.2f} "
        f"(target >= {TARGET_RATIO}: {met[ratio >= TARGET_RATIO]})",
        f"pickup with the nudge: p50 {figures['pickup_p50_ms_nudge']:.1f} ms, "
        f"p99 {figures['pickup_p99_ms_nudge']:.1f} ms "
        f"(target p99 < {TARGET_NUDGE_P99_MS:.0f} ms: "
        f"{met[figures['pickup_p99_ms_nudge'] < TARGET_NUDGE_P99_MS]})",
        f"pickup polling every {POLL_BEAT_MS} ms: p50 {figures['pickup_p50_ms_poll']:.1f} ms, "
        f"p99 {figures['pickup_p99_ms_poll']:.1f} ms",
        f"nudge / poll: p50 {p50:.2f}, p99 {p99:.2f}",
    ]


def measure(
    args: argparse.Namespace,
    urls: databases.DatabaseUrls,
    broker: str,
    directory: Path,
    fleet: Fleet,
) -> dict[str, float]:
    verbose = args.verbose
    env = fleet.env
    settings = Settings.from_env(env)
    database = Database(urls.app, pool_size=2, application_name="occ-e2e-bench")
    celery = tasks_app.create(settings)
    counter = redis.Redis.from_url(broker)
    try:
        boot = installation.bootstrap_installation(database, name="bench", admin_name="admin")
        assert boot.admin_principal_id is not None
        occ = e2e_installation.Occ(database, boot.admin_principal_id, nudge.Nudger(celery))

        fleet.worker(
            "control",
            app=OCC_APP,
            queues=tasks_app.CONTROL_QUEUE,
            pool=args.control_pool,
            concurrency=2,
        )
        for i in (1, 2):
            fleet.worker(
                f"drivers-{i}",
                app=OCC_APP,
                queues=tasks_app.DRIVER_QUEUE,
                pool="prefork",
                concurrency=1,
            )
        log(verbose, "occ workers ready")

        figures: dict[str, float] = {}
        figures["occ_items_per_s"], figures["celery_tasks_per_s"] = bracketed_throughputs(
            occ, env, fleet, counter, args.items, verbose
        )
        local_root = Path(settings.local_root)
        for with_nudge, label in ((True, "nudge"), (False, "poll")):
            latencies = pickup_latencies(
                occ,
                fleet,
                counter,
                local_root,
                samples=args.samples,
                with_nudge=with_nudge,
                verbose=verbose,
            )
            figures[f"pickup_p50_ms_{label}"] = percentile(latencies, 0.50)
            figures[f"pickup_p99_ms_{label}"] = percentile(latencies, 0.99)
            if not with_nudge:
                early = sum(1 for value in latencies if value < 50)
                log(
                    verbose,
                    f"poll: {early} of {len(latencies)} samples picked up within "
                    f"50 ms (a finished run_work's nudge, not beat)",
                )
        return figures
    finally:
        counter.close()
        celery.close()
        database.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--items",
        type=int,
        default=500,
        help="work items (and plain Celery tasks) of the throughput runs",
    )
    parser.add_argument(
        "--samples", type=int, default=200, help="admissions timed in each pickup-latency run"
    )
    parser.add_argument(
        "--control-pool",
        choices=("threads", "prefork"),
        default="threads",
        help="pool of the control worker (threads, as deployed, by default)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    if args.items < 1 or args.samples < 1:
        parser.error("--items and --samples must be positive")

    exit_on_sigterm()
    broker = broker_url()
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    with scratch("e2e", broker) as (directory, urls):
        log(args.verbose, f"database {urls.name} created and migrated")
        with Fleet(fleet_env(urls, broker, directory / "local"), directory).supervised() as fleet:
            figures = measure(args, urls, broker, directory, fleet)
            fleet.stop_all()

    report(
        figures,
        [
            *summary(figures),
            f"({time.monotonic() - started:.0f} s in all; control pool {args.control_pool}; "
            f"1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
            f"on {os.cpu_count()} CPUs)",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
