"""Real Celery worker and beat processes for runtime tests, and waiting with deadlines."""

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
from typing import TypeVar

import pytest

T = TypeVar("T")

CELERY = [sys.executable, "-m", "celery", "-A", "occ.tasks.app"]


def wait_for(
    condition: Callable[[], T],
    *,
    timeout: float,
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def signal(self, number: int) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, number)

    def stop(self, timeout: float = 20) -> int | None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_group()
        return self.popen.returncode

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(10)


@dataclass
class Fleet:
    """Worker and beat processes sharing one environment; all stopped at the end."""

    env: dict[str, str]
    directory: Path
    processes: list[Process] = field(default_factory=list)

    def _start(
        self, name: str, arguments: list[str], extra_env: dict[str, str] | None = None
    ) -> Process:
        log = self.directory / f"{name}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            [*CELERY, *arguments],
            env={**self.env, **(extra_env or {})},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        handle.close()
        process = Process(name, popen, log)
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
    ) -> Process:
        readiness = self.directory / f"{name}.ready"
        process = self._start(
            name,
            [
                "worker",
                "-Q",
                queues,
                "-P",
                pool,
                "-c",
                str(concurrency),
                "-n",
                f"{name}@%h",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
                "-l",
                "WARNING",
            ],
            {"OCC_WORKER_READINESS_PATH": str(readiness)},
        )
        if ready:
            wait_for(
                lambda: readiness.exists() or process.popen.poll() is not None,
                timeout=60,
                message=f"worker {name} to become ready",
            )
            if process.popen.poll() is not None:
                pytest.fail(f"worker {name} exited: {process.text()[-2000:]}")
        return process

    def beat(self, name: str = "beat") -> Process:
        return self._start(
            name,
            [
                "beat",
                "-S",
                "celery.beat:Scheduler",
                "--schedule",
                str(self.directory / f"{name}-schedule"),
                "-l",
                "WARNING",
            ],
        )

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        for process in self.processes:
            if process.popen.poll() is None:
                process.kill_group()


def fleet(env: dict[str, str], directory: Path) -> Iterator[Fleet]:
    group = Fleet(env=env, directory=directory)
    try:
        yield group
    finally:
        group.stop()
