"""The fleet benchmark's observer processes: each runs the fleet observer's tick the way beat
and the control worker do, builds the kubernetes driver from settings and reaches the fake
Kubernetes API server through a kubeconfig, and reports what it counted."""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa

from bench import process_cpu, workers
from bench.support import BenchError
from occ.state.db import Database

GATEWAY_IMAGE: Final = "registry.example/occ-gateway:bench"
SECRET_KEY: Final = "fleet-bench-secret-key"


@dataclass(frozen=True)
class Run:
    """How an observer process runs: its settings and for how long."""

    database_url: str
    kubeconfig: str
    interval_ms: int
    duration_s: float
    limit: int = 1_000
    """Most Agents one tick takes (the observer's batch)."""
    repair: bool = False
    """Also run the repairs it admits (in this process, as a driver worker would)."""


@dataclass
class Result:
    """What one observer process counted."""

    observations: int = 0
    ticks: int = 0
    statements: int = 0
    cpu_s: float = 0.0
    lags: list[float] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=dict)


def observe(run: Run, results: Any, ready: Any, go: Any) -> None:
    """An observer process: build a worker as the control worker does, tick for a while."""
    from occ.drivers import compute  # noqa: PLC0415 - in the spawned process only
    from occ.drivers.compute.kubernetes.driver import KubernetesComputeDriver  # noqa: PLC0415
    from occ.reconcile import environment, executor, observer  # noqa: PLC0415
    from occ.runtime import composition  # noqa: PLC0415
    from occ.settings.config import Settings  # noqa: PLC0415

    settings = Settings(
        database_url=run.database_url,
        compute_driver="kubernetes",
        kubernetes_kubeconfig=run.kubeconfig,
        kubernetes_gateway_image=GATEWAY_IMAGE,
        maintenance_interval_ms=run.interval_ms,
        secret_key=SECRET_KEY,
    )
    tick_s = settings.observer_tick_period_ms / 1000  # beat's period, as production derives it
    database = Database(run.database_url, pool_size=3, application_name="occ-fleet-observer")
    worker = environment.Worker(
        database=database,
        policy=composition.queue_policy(settings),
        driver=compute.load("kubernetes", settings),
        shutdown=threading.Event(),
        settings=settings,
    )
    result = Result()

    def counted(*_: object) -> None:
        result.statements += 1

    observer.tick(worker, limit=1)  # connects, and starts what the driver keeps (a cache)
    driver = worker.driver
    assert isinstance(driver, KubernetesComputeDriver)
    # the cache's first lists are its start, not observing: they are not counted
    driver.informer.start()
    workers.wait_for(
        lambda: driver.informer.store.synced, timeout=300, interval=0.05, message="the cache"
    )
    ready.put(os.getpid())
    go.wait()
    sa.event.listen(database.engine, "before_cursor_execute", counted)
    cpu = os.times()
    deadline = time.monotonic() + run.duration_s
    while time.monotonic() < deadline:
        started = time.monotonic()
        tick = observer.tick(worker, limit=run.limit)
        result.ticks += 1
        result.observations += tick.observed
        if result.ticks > 1:  # the first tick's lag is the process's start, not observing
            result.lags.append(tick.lag_s)
        for verdict, count in tick.verdicts.items():
            result.verdicts[str(verdict)] = result.verdicts.get(str(verdict), 0) + count
        if run.repair:
            for claim in executor.claim_batch(database, worker.policy, max_in_flight=8):
                executor.run(worker, claim.work_id, str(claim.token))
        if tick.caught_up or tick.held:
            time.sleep(max(tick_s - (time.monotonic() - started), 0.0))
    after = os.times()
    result.cpu_s = (after.user - cpu.user) + (after.system - cpu.system)
    sa.event.remove(database.engine, "before_cursor_execute", counted)
    database.dispose()
    results.put(result)


def run_observers(
    run: Run, processes: int, on_ready: Callable[[], None] | None = None
) -> tuple[list[Result], float]:
    """``processes`` observers started together; their results and PostgreSQL's CPU seconds.
    ``on_ready`` runs once every observer has started (its cache synced), right before they
    begin."""
    context = multiprocessing.get_context("spawn")
    results, ready, go = context.Queue(), context.Queue(), context.Event()
    started = [
        context.Process(target=observe, args=(run, results, ready, go), daemon=True)
        for _ in range(processes)
    ]
    for process in started:
        process.start()
    for _ in started:
        ready.get(timeout=120)
    if on_ready is not None:
        on_ready()
    database = sa.engine.make_url(run.database_url).database or ""
    postgres_before = process_cpu.postgres_cpu_s(database)
    go.set()
    collected = []
    for _ in started:
        try:
            collected.append(results.get(timeout=run.duration_s + 120))
        except queue.Empty as exc:
            raise BenchError("an observer process did not report") from exc
    for process in started:
        process.join(timeout=30)
    return collected, process_cpu.postgres_cpu_s(database) - postgres_before
