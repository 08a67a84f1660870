"""Private servers a fault test can stop and start: ``redis-server`` and PostgreSQL.

Each runs on a free loopback port chosen here, keeps that port across restarts and is stopped
by ``close``. PostgreSQL comes from the installed server binaries (``initdb``/``pg_ctl``),
run as the ``postgres`` system user when the tests run as root. Nothing here is shared with
other test runs.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from occ.dev.broker import throwaway_redis_options

API_COMMAND = [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()"]
"""The API under gunicorn, as deployed; ``--bind`` and the pool's options go after it."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class RedisServer:
    """A ``redis-server`` without persistence on a port of its own (with ``password``:
    clients must authenticate)."""

    def __init__(self, directory: Path, password: str | None = None) -> None:
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed")
        self.directory = directory
        self.password = password
        self.port = free_port()
        self.popen: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(
            port=self.port, password=self.password, socket_timeout=2, socket_connect_timeout=2
        )

    def alive(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        self.popen = subprocess.Popen(
            [
                "redis-server",
                *throwaway_redis_options(self.port, self.directory),
                *(["--requirepass", self.password] if self.password else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.starts += 1
        _wait(self.alive, 10, "redis-server to answer")

    def kill(self) -> None:
        """Stop at once (SIGKILL): clients see their connections drop."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)

    def flushall(self) -> None:
        self.client().flushall()

    def pause(self) -> None:
        if self.popen is not None:
            os.kill(self.popen.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.popen is not None:
            os.kill(self.popen.pid, signal.SIGCONT)

    def close(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.resume()
        self.kill()


class PostgresServer:
    """A PostgreSQL server of its own (superuser ``postgres``, trust on loopback)."""

    def __init__(self) -> None:
        self.bin = _postgres_bin()
        # under /tmp and readable by the server's user (pytest's directories are not)
        self.directory = Path(tempfile.mkdtemp(prefix="occ-pg-"))
        self.directory.chmod(0o755)
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = free_port()
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.directory}'\nfsync = off\n"
                "max_connections = 200\n"
            )

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *arguments: str) -> None:
        command = [str(self.bin / tool), *arguments]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


def _postgres_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found is None:
        candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not candidates:
            pytest.skip("the PostgreSQL server binaries are not installed")
        found = str(candidates[-1])
    return Path(os.path.realpath(found)).parent
