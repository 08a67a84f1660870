"""The worker fleet the fleet benchmarks (``e2e_bench.py``, ``docker_bench.py``,
``kubernetes_bench.py``) run: Celery worker and beat processes started the way the runtime tests
start them (``python -m celery``, one session each, a readiness marker per worker), the
environment they share, and the scratch database, broker and directory of a run."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

import redis
from celery import Celery

from bench.support import BenchError
from occ.settings.config import Settings
from occ.tasks import app as tasks_app
from tests.support import databases
from tests.support.processes import Process, beat_arguments, poll, start, worker_arguments

T = TypeVar("T")

ROOT: Final = Path(__file__).resolve().parent.parent
POLL_S: Final = 0.02
OCC_APP: Final = "occ.tasks.app"
CLAIM_INTERVAL_MS: Final = 60_000
"""How often the fleet's beat claims unless a benchmark starts one of its own: the nudges make
the claims."""


def wait_for(
    condition: Callable[[], T | None], *, timeout: float, interval: float = POLL_S, message: str
) -> T:
    """``condition``'s first true value, polling every ``interval`` s; ``BenchError`` after
    ``timeout`` s."""
    value = poll(condition, timeout=timeout, interval=interval)
    if value is None:
        raise BenchError(f"timed out after {timeout:.0f} s waiting for {message}")
    return value


@contextlib.contextmanager
def celery_app(env: dict[str, str]) -> Iterator[Celery]:
    """A Celery app configured from the fleet's environment (to nudge it or send it a task),
    closed at the end."""
    app = tasks_app.create(Settings.from_env(env))
    try:
        yield app
    finally:
        app.close()


@dataclass
class Fleet:
    """Celery worker and beat processes sharing one environment."""

    env: dict[str, str]
    directory: Path
    processes: list[Process] = field(default_factory=list)

    def _start(self, name: str, arguments: list[str], extra: dict[str, str]) -> Process:
        command = [sys.executable, "-m", "celery", *arguments]
        process = start(self.directory, name, command, {**self.env, **extra}, cwd=ROOT)
        self.processes.append(process)
        return process

    def worker(self, name: str, *, app: str, queues: str, pool: str, concurrency: int) -> Process:
        readiness = self.directory / f"{name}.ready"
        process = self._start(
            name,
            [
                "-A",
                app,
                *worker_arguments(name, queues=queues, pool=pool, concurrency=concurrency),
            ],
            {"OCC_WORKER_READINESS_PATH": str(readiness)},
        )
        wait_for(
            lambda: readiness.exists() or not process.alive(),
            timeout=60,
            interval=0.05,
            message=f"worker {name} to become ready",
        )
        if not process.alive():
            raise BenchError(f"worker {name} exited:\n{process.tail()}")
        return process

    def start_deploy_workers(self, driver_concurrency: int) -> None:
        """What the deploy benchmarks run: a control worker (two threads), one driver worker
        of ``driver_concurrency`` processes and a beat claiming every 250 ms."""
        self.worker(
            "control", app=OCC_APP, queues=tasks_app.CONTROL_QUEUE, pool="threads", concurrency=2
        )
        self.worker(
            "drivers-1",
            app=OCC_APP,
            queues=tasks_app.DRIVER_QUEUE,
            pool="prefork",
            concurrency=driver_concurrency,
        )
        self.beat("beat", 250)

    def beat(self, name: str, claim_interval_ms: int) -> Process:
        return self._start(
            name,
            ["-A", OCC_APP, *beat_arguments(self.directory / f"{name}-schedule")],
            {"OCC_CLAIM_INTERVAL_MS": str(claim_interval_ms)},
        )

    def check(self) -> None:
        for process in self.processes:
            if not process.alive():
                raise BenchError(f"{process.name} exited:\n{process.tail()}")

    def stop(self, process: Process) -> None:
        process.stop()
        self.processes.remove(process)

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.kill_all()

    def kill_all(self) -> None:
        for process in self.processes:
            if process.alive():
                process.kill_group()

    @contextlib.contextmanager
    def supervised(self) -> Iterator[Fleet]:
        """Kill every process at the end; after a failure other than an interrupt, first print
        the last lines each one logged."""
        try:
            yield self
        except BaseException as failure:
            self.kill_all()
            if not isinstance(failure, SystemExit | KeyboardInterrupt):
                for process in self.processes:
                    print(f"--- {process.name} (last lines) ---\n{process.tail()}", file=sys.stderr)
            raise
        finally:
            self.kill_all()


def driver_durations(fleet: Fleet, work_ids: set[str]) -> list[float]:
    """``durationMs`` of the driver workers' ``worker.completed`` events for ``work_ids``."""
    durations = []
    for process in fleet.processes:
        if not process.name.startswith("drivers-"):
            continue
        for line in process.log.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"event":"worker.completed"' not in line:
                continue
            event = json.loads(line)
            if event.get("workId") in work_ids:
                durations.append(float(event["durationMs"]))
    return durations


def exit_on_sigterm() -> None:
    """Make SIGTERM raise ``SystemExit(128 + 15)``, so that a benchmark's ``finally`` blocks
    still stop its fleet and drop its database."""

    def terminated(number: int, frame: object) -> None:
        raise SystemExit(128 + number)

    signal.signal(signal.SIGTERM, terminated)


@contextlib.contextmanager
def scratch(label: str, broker: str) -> Iterator[tuple[Path, databases.DatabaseUrls]]:
    """A run's temporary directory and fresh database (named after ``label``) on a flushed
    broker: the database is dropped, the broker flushed and the directory removed at the end."""
    broker_client = redis.Redis.from_url(broker)
    broker_client.flushdb()
    directory = Path(tempfile.mkdtemp(prefix=f"occ-{label}-bench-"))
    urls = databases.urls_for(f"occ_{label}_bench_{os.getpid()}")
    try:
        databases.create_test_database(urls.name)
        yield directory, urls
    finally:
        with contextlib.suppress(Exception):
            databases.drop_database(urls)
        broker_client.flushdb()
        broker_client.close()
        shutil.rmtree(directory, ignore_errors=True)


def fleet_env(urls: databases.DatabaseUrls, broker: str, local_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    pythonpath = [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(pythonpath),
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": urls.app,
            "OCC_BROKER_URL": broker,
            "OCC_LOCAL_ROOT": str(local_root),
            "OCC_WORKER_LEASE_DURATION_MS": "15000",
            "OCC_CLAIM_INTERVAL_MS": str(CLAIM_INTERVAL_MS),
            "OCC_RECOVERY_INTERVAL_MS": "5000",
        }
    )
    return env
