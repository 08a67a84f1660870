"""Real Celery worker and beat processes for runtime tests, the nudge that wakes them, and
waiting with deadlines."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

import pytest

from occ.settings.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import nudge as nudges

T = TypeVar("T")

CELERY = [sys.executable, "-m", "celery", "-A", "occ.tasks.app"]


def clean_environment() -> dict[str, str]:
    """This process's environment without its ``OCC_`` settings, for a child given its own."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}


def worker_environment(
    *,
    database_url: str,
    broker_url: str,
    local_root: Path,
    lease_ms: int,
    claim_interval_ms: int,
    pepper: str = "test-pepper",
    secret_key: str = "test-secret",
    settings: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of occ processes on ``database_url`` and ``broker_url`` with the local
    driver under ``local_root``: worker leases of ``lease_ms``, a claim every
    ``claim_interval_ms``, dispatch leases of 3 s, recovery every 500 ms, the API key ``pepper``
    and the ``secret_key``, and ``settings`` (``OCC_`` names) over these."""
    return {
        **clean_environment(),
        "OCC_ENV": "development",
        "OCC_DATABASE_URL": database_url,
        "OCC_BROKER_URL": broker_url,
        "OCC_LOCAL_ROOT": str(local_root),
        "OCC_WORKER_LEASE_DURATION_MS": str(lease_ms),
        "OCC_CLAIM_INTERVAL_MS": str(claim_interval_ms),
        "OCC_DISPATCH_LEASE_MS": "3000",
        "OCC_RECOVERY_INTERVAL_MS": "500",
        "OCC_API_KEY_PEPPER": pepper,
        "OCC_SECRET_KEY": secret_key,
        # every test's processes answer from 127.0.0.1: a limit shared by all of them would
        # refuse one test's requests for another's failures
        "OCC_RATE_LIMIT_FAILED_AUTH": "off",
        "OCC_RATE_LIMIT_PER_PRINCIPAL": "off",
        "OCC_RATE_LIMIT_PER_ADDRESS": "off",
        **(settings or {}),
    }


def nudge(env: dict[str, str]) -> None:
    """Wake the workers of ``env`` as an admission does: a claim message on its broker."""
    nudges.Nudger(tasks_app.create(Settings.from_env(env))).send_now()


def poll(
    condition: Callable[[], T | Literal[False] | None], *, timeout: float, interval: float
) -> T | None:
    """``condition``'s first truthy value, polling every ``interval`` s; None after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


def wait_for(
    condition: Callable[[], T | Literal[False] | None],
    *,
    timeout: float,
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout``."""
    value = poll(condition, timeout=timeout, interval=interval)
    if value is None:
        pytest.fail(f"timed out after {timeout} s waiting for {message}")
    return value


@dataclass
class Process:
    """A process started in a session of its own, its output in ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def tail(self, characters: int = 2_000) -> str:
        return self.text()[-characters:]

    def signal(self, number: int) -> None:
        if self.alive():
            os.kill(self.popen.pid, number)

    def stop(self, timeout: float = 20) -> int | None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_group()
        return self.popen.returncode

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)


def start(
    directory: Path, name: str, command: list[str], env: dict[str, str], cwd: Path | None = None
) -> Process:
    """Start ``command`` in a session of its own, its output in ``directory/name.log``."""
    log = directory / f"{name}.log"
    with log.open("wb") as handle:
        popen = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Process(name, popen, log)


def worker_arguments(name: str, *, queues: str, pool: str, concurrency: int) -> list[str]:
    """``celery worker`` arguments for worker ``name`` on ``queues``: no heartbeat, gossip or
    mingle (the workers of one test or benchmark need none), warnings only."""
    return [
        "worker", "-Q", queues, "-P", pool, "-c", str(concurrency), "-n", f"{name}@%h",
        "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "WARNING",
    ]  # fmt: skip


def beat_arguments(schedule: Path) -> list[str]:
    """``celery beat`` arguments: the default scheduler, its state in ``schedule``."""
    return ["beat", "-S", "celery.beat:Scheduler", "--schedule", str(schedule), "-l", "WARNING"]


@dataclass
class Fleet:
    """Worker and beat processes sharing one environment; all stopped at the end."""

    env: dict[str, str]
    directory: Path
    processes: list[Process] = field(default_factory=list)

    def _start(
        self, name: str, arguments: list[str], extra_env: dict[str, str] | None = None
    ) -> Process:
        process = start(
            self.directory, name, [*CELERY, *arguments], {**self.env, **(extra_env or {})}
        )
        self.processes.append(process)
        return process

    def worker(
        self,
        name: str,
        *,
        queues: str = "occ.drivers",
        pool: str = "prefork",
        concurrency: int = 1,
        ready: bool = True,
        extra_env: dict[str, str] | None = None,
        events: bool = False,
    ) -> Process:
        readiness = self.directory / f"{name}.ready"
        process = self._start(
            name,
            worker_arguments(name, queues=queues, pool=pool, concurrency=concurrency)
            + (["-E"] if events else []),
            {**(extra_env or {}), "OCC_WORKER_READINESS_PATH": str(readiness)},
        )
        if ready:
            wait_for(
                lambda: readiness.exists() or not process.alive(),
                timeout=60,
                message=f"worker {name} to become ready",
            )
            if not process.alive():
                pytest.fail(f"worker {name} exited: {process.tail()}")
        return process

    def control_worker(
        self,
        name: str = "control",
        concurrency: int = 2,
        extra_env: dict[str, str] | None = None,
        events: bool = False,
    ) -> Process:
        """A worker of the control queue on a threads pool, as deployed."""
        return self.worker(
            name,
            queues="occ.control",
            pool="threads",
            concurrency=concurrency,
            extra_env=extra_env,
            events=events,
        )

    def beat(self, name: str = "beat") -> Process:
        return self._start(name, beat_arguments(self.directory / f"{name}-schedule"))

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        for process in self.processes:
            if process.alive():
                process.kill_group()


def fleet(env: dict[str, str], directory: Path) -> Iterator[Fleet]:
    group = Fleet(env=env, directory=directory)
    try:
        yield group
    finally:
        group.stop()
