"""The chaos run's fleet: private PostgreSQL, Redis and proxy, real workers and beat, supervised.

``Cluster`` starts a control worker (threads pool), two driver workers (prefork; ``drivers-a``
reaches PostgreSQL through the ``SilentProxy``, ``drivers-b`` directly) and beat, and restarts
any that exits, as ``occ dev`` does. Exits the nemesis caused are expected; any other is
recorded as unexpected (the checker requires none). Kill times of every process of a killed
group are kept: an effect journalled by a pool process that was killed ends at that moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import servers
from tests.support.processes import beat_arguments, wait_for

CELERY = [sys.executable, "-m", "celery", "-A", "occ.tasks.app"]
WORKERS = ("control", "drivers-a", "drivers-b")


@dataclass
class Managed:
    name: str
    arguments: list[str]
    env: dict[str, str]
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0


@dataclass
class Cluster:
    directory: Path
    env: dict[str, str]
    proxied_database_url: str
    redis: servers.RedisServer
    postgres: servers.PostgresServer
    worker_env: dict[str, dict[str, str]] = field(default_factory=dict)
    """What the named processes' environments add (a shifted clock, an older release)."""
    managed: dict[str, Managed] = field(default_factory=dict)
    killed_at: dict[int, float] = field(default_factory=dict)
    expected_exits: set[str] = field(default_factory=set)
    unexpected_exits: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def start(self) -> None:
        for name in WORKERS:
            queues, pool = (
                ("occ.control", "threads") if name == "control" else ("occ.drivers", "prefork")
            )
            env = dict(self.env)
            if name == "drivers-a":
                env["OCC_DATABASE_URL"] = self.proxied_database_url
            env.update(self.worker_env.get(name, {}))
            readiness = self.directory / f"{name}.ready"
            env["OCC_WORKER_READINESS_PATH"] = str(readiness)
            arguments = [
                "worker", "-Q", queues, "-P", pool, "-c", "2", "-n", f"{name}@%h",
                "--without-gossip", "--without-mingle", "-l", "WARNING",
            ]  # fmt: skip
            self.managed[name] = Managed(name, arguments, env)
        beat_env = {**self.env, **self.worker_env.get("beat", {})}
        self.managed["beat"] = Managed("beat", self._beat_arguments("beat"), beat_env)
        for process in self.managed.values():
            self._launch(process)
        for name in WORKERS:
            self.wait_ready(name)
        threading.Thread(target=self._supervise, name="chaos-supervisor", daemon=True).start()

    def _beat_arguments(self, name: str) -> list[str]:
        return beat_arguments(self.directory / f"{name}-schedule")

    def _launch(self, process: Managed) -> None:
        readiness = process.env.get("OCC_WORKER_READINESS_PATH")
        if readiness and process.name != "beat":
            Path(readiness).unlink(missing_ok=True)
        with (self.directory / f"{process.name}.log").open("ab") as log:
            process.popen = subprocess.Popen(
                [*CELERY, *process.arguments],
                env=process.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process.starts += 1

    def wait_ready(self, name: str) -> None:
        process = self.managed[name]
        readiness = Path(process.env["OCC_WORKER_READINESS_PATH"])
        wait_for(readiness.exists, timeout=90, message=f"{name} to become ready")

    def _supervise(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for process in self.managed.values():
                    if process.popen is None or process.popen.poll() is None:
                        continue
                    if process.name in self.expected_exits:
                        self.expected_exits.discard(process.name)
                    else:
                        self.unexpected_exits.append(
                            f"{process.name} exited with {process.popen.returncode}"
                        )
                    self._launch(process)

    # -- what the nemesis does to processes -----------------------------------------------

    def group(self, name: str) -> list[int]:
        """Pids of the named process's group (its pool processes included)."""
        popen = self.managed[name].popen
        if popen is None or popen.poll() is not None:
            return []
        members = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.getpgid(int(entry.name)) == popen.pid:
                        members.append(int(entry.name))
        return members

    def kill(self, name: str) -> None:
        with self._lock:
            popen = self.managed[name].popen
            if popen is None or popen.poll() is not None:
                return
            members = self.group(name)
            self.expected_exits.add(name)
            now = time.time()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            for pid in members:
                self.killed_at.setdefault(pid, now)
            popen.wait(10)

    def signal_group(self, name: str, number: int) -> None:
        popen = self.managed[name].popen
        if popen is not None and popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, number)

    def start_beat(self, name: str) -> subprocess.Popen[bytes]:
        with (self.directory / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                [*CELERY, *self._beat_arguments(name)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def logs(self) -> dict[str, str]:
        return {
            path.stem: path.read_text(encoding="utf-8", errors="replace")
            for path in self.directory.glob("*.log")
        }

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for process in self.managed.values():
                if process.popen is not None and process.popen.poll() is None:
                    self.signal_group(process.name, signal.SIGCONT)
                    process.popen.send_signal(signal.SIGTERM)
            for process in self.managed.values():
                if process.popen is None:
                    continue
                try:
                    process.popen.wait(20)
                except subprocess.TimeoutExpired:
                    self.signal_group(process.name, signal.SIGKILL)
                    process.popen.wait(10)
