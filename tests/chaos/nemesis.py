"""The faults of a chaos run, at seeded random moments, one after another.

Each fault is a function of the ``Cluster`` and the run's generator; the ``Nemesis`` thread
injects them at their planned times and records when each began and ended (the checker's
recovery figures start at the end). Long faults (SIGSTOP, a silent database) last longer than
a lease, so the work they hold is recovered and claimed again while the stale holder is stuck.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from occ.foundation import errors
from occ.settings.config import Settings
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import names
from tests.chaos import cluster as chaos_cluster
from tests.chaos import proxy as chaos_proxy

KINDS = (
    "kill9",
    "sigstop",
    "flush",
    "redis_restart",
    "pg_restart",
    "db_blackhole",
    "dup",
    "beat2",
)


@dataclass(frozen=True)
class Fault:
    kind: str
    target: str
    started_at: float
    ended_at: float


@dataclass
class Nemesis:
    """Injects ``plan`` (``(seconds after start, kind)``) against the cluster."""

    cluster: chaos_cluster.Cluster
    proxy: chaos_proxy.SilentProxy
    database: Database
    settings: Settings
    rng: random.Random
    plan: list[tuple[float, str]]
    lease_s: float
    admission: threading.Lock
    done: list[Fault] = field(default_factory=list)
    frozen: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duplicates_sent: int = 0

    @staticmethod
    def schedule(rng: random.Random, faults: int, duration_s: float) -> list[tuple[float, str]]:
        """Every kind once before any repeats (a short run still covers them), at random times."""
        kinds: list[str] = []
        while len(kinds) < faults:
            batch = list(KINDS)
            rng.shuffle(batch)
            kinds += batch
        times = sorted(rng.uniform(1.0, duration_s) for _ in range(faults))
        return list(zip(times, kinds[:faults], strict=True))

    def run(self, started: float) -> None:
        for at_s, kind in self.plan:
            delay = started + at_s - time.time()
            if delay > 0:
                time.sleep(delay)
            begin = time.time()
            try:
                target = self._inject(kind)
            except Exception as exc:  # a fault that could not be injected is reported
                self.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            self.done.append(Fault(kind, target, begin, time.time()))

    def _inject(self, kind: str) -> str:
        handlers: dict[str, Callable[[], str]] = {
            "kill9": self._kill9,
            "sigstop": self._sigstop,
            "flush": self._flush,
            "redis_restart": self._redis_restart,
            "pg_restart": self._pg_restart,
            "db_blackhole": self._db_blackhole,
            "dup": self._duplicate_deliveries,
            "beat2": self._second_beat,
        }
        return handlers[kind]()

    def _worker(self) -> str:
        return self.rng.choice(chaos_cluster.WORKERS)

    def _kill9(self) -> str:
        name = self._worker()
        self.cluster.kill(name)
        return name

    def _sigstop(self) -> str:
        name = self._worker()
        pids = tuple(self.cluster.group(name))
        stopped = time.time()
        self.cluster.signal_group(name, signal.SIGSTOP)
        time.sleep(self.lease_s + self.rng.uniform(0.5, 1.5))  # past its lease
        self.cluster.signal_group(name, signal.SIGCONT)
        self.frozen.append((pids, stopped, time.time()))  # those pids did nothing meanwhile
        return name

    def _flush(self) -> str:
        self.cluster.redis.flushall()
        return "redis"

    def _redis_restart(self) -> str:
        self.cluster.redis.kill()
        time.sleep(self.rng.uniform(0.3, 2.0))
        self.cluster.redis.start()
        return "redis"

    def _pg_restart(self) -> str:
        mode = self.rng.choice(("fast", "immediate"))
        with self.admission:  # no admission is in doubt across the restart
            self.cluster.postgres.restart(mode)
        return f"postgres:{mode}"

    def _db_blackhole(self) -> str:
        self.proxy.silent.set()
        try:
            time.sleep(self.lease_s + self.rng.uniform(0.5, 1.5))
        finally:
            self.proxy.silent.clear()
        return "drivers-a<->postgres"

    def _duplicate_deliveries(self) -> str:
        """Send ``run_work`` again for items claimed right now, with their current token."""
        rows = self._claimed()
        celery = tasks_app.create(self.settings)
        for work_id, token in rows:
            for _ in range(2):
                celery.send_task(
                    names.RUN_WORK,
                    args=[work_id, str(token)],
                    queue=names.DRIVER_QUEUE,
                    retry=False,
                    argsrepr=repr([work_id, "<token>"]),
                )
                self.duplicates_sent += 1
        return f"{len(rows)} items"

    def _claimed(self) -> list[Any]:
        deadline = time.monotonic() + 10
        while True:  # right after a PostgreSQL restart the pool's first try may fail
            try:
                with self.database.transaction() as session:
                    return list(
                        session.execute(
                            sa.text(
                                "SELECT id, claim_token FROM occ.controller_work"
                                " WHERE state = 'claimed' LIMIT 4"
                            )
                        ).all()
                    )
            except errors.DependencyUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _second_beat(self) -> str:
        beat = self.cluster.start_beat("beat2")
        try:
            time.sleep(self.rng.uniform(2.0, 4.0))
        finally:
            beat.send_signal(signal.SIGTERM)
            beat.wait(20)
        return "beat2"
