"""``occ dev``: the whole product on one machine, with no external services.

Starts an embedded PostgreSQL (pgserver) unless ``OCC_DATABASE_URL`` is set and a Redis process
unless ``OCC_BROKER_URL`` is set (kombu ``filesystem://`` under ``<home>/broker`` when no
``redis-server`` exists), migrates, bootstraps the Installation (admin key in
``<home>/admin.key``, mode 0600, written only when a key is minted), then runs the API, the
control and driver workers and beat as child processes. When all are ready it prints one JSON
line (``dev.ready``) on stdout; everything else goes to ``<home>/logs/``. Ctrl-C or SIGTERM stops
the fleet in an order that leaves no claim behind, then Redis and PostgreSQL.

Layout of ``<home>``: ``pg/`` (database), ``redis/``, ``broker/`` (filesystem fallback),
``local/`` (local Compute Driver), ``logs/<name>.log``, ``run/`` (lock, ``dev.pids``, worker
readiness markers ``<name>.ready``), ``secrets.env`` (generated pepper and secret key, 0600),
``admin.key``, ``beat-schedule``.

Like every entry point, the runner hands the environment it was started with to its children;
it reads it only to build theirs (``Settings.from_env`` of that environment validates it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final

from occ import devservices, schema
from occ.config import Settings
from occ.controller import installation, principals
from occ.db import Database
from occ.drivers.compute import local
from occ.state import api_keys

logger = logging.getLogger("occ.dev")

DATABASE_NAME: Final = "occ"
APP_ROLE: Final = "occ_app"
WORKERS: Final[tuple[str, ...]] = ("control", "drivers")
MARKER_GRACE_S: Final = 10.0
"""A worker that answers ``ping`` but writes no readiness marker is accepted after this."""
STOP_TIMEOUT_S: Final = 30.0
DRAIN_TIMEOUT_S: Final = 5.0
SECRET_NAMES: Final = ("OCC_API_KEY_PEPPER", "OCC_SECRET_KEY")


class DevError(Exception):
    """A failure ``occ dev`` reports in one line and exits 1 for."""


class _Interrupted(BaseException):
    """A stop signal arrived while start-up was blocked (not an ``Exception``: never wrapped)."""


@dataclass(frozen=True)
class DevOptions:
    """What ``occ dev`` was asked for."""

    home: Path
    port: int = 8000
    compute: str | None = None
    ready_timeout: float = 120.0


def run(options: DevOptions, environ: Mapping[str, str] | None = None) -> int:
    """Run until stopped; the exit code (0 after a requested stop, 1 on a failure)."""
    return _Runner(options, dict(os.environ if environ is None else environ)).run()


class _Runner:
    def __init__(self, options: DevOptions, environ: dict[str, str]) -> None:
        self.options = options
        self.environ = environ
        self.home = options.home.expanduser().resolve()
        self.logs = self.home / "logs"
        self.run_dir = self.home / "run"
        self.key_file = self.home / "admin.key"
        self.children: dict[str, devservices.ChildProcess] = {}
        self.postgres: devservices.EmbeddedPostgres | None = None
        self.redis: devservices.RedisProcess | None = None
        self.signals: list[int] = []
        self.raise_on_signal = True
        self.ready = False
        self.cwd = self.run_dir
        self.settings: Settings | None = None
        self.port = options.port

    # -- top level -----------------------------------------------------------------------------

    def run(self) -> int:
        for directory in (self.home, self.logs, self.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
        try:
            lock = self._lock()
        except DevError as exc:
            _error(str(exc))
            return 1
        log_handler = self._log_to_file()
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        code = 0
        try:
            self._start()
            self.raise_on_signal = False
            self._wait_until_ready()
            if not self.signals:
                self._announce()
                self._watch()
            code = 0 if self.ready else 128 + self.signals[0]
        except _Interrupted:
            code = 128 + self.signals[0]
        except DevError as exc:
            _error(str(exc))
            code = 1
        finally:
            self.raise_on_signal = False
            if not self._stop():
                code = code or 1
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            logging.getLogger().removeHandler(log_handler)
            log_handler.close()
            lock.close()
        return code

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        logger.info("signal %s received", signal.Signals(signum).name)
        if self.raise_on_signal:
            self.raise_on_signal = False
            raise _Interrupted

    def _log_to_file(self) -> logging.Handler:
        """Send this process's log records to ``<home>/logs/dev.log``, not the terminal."""
        handler = logging.FileHandler(self.logs / "dev.log", mode="w", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        for noisy in ("pgserver", "alembic", "kombu", "celery", "amqp"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        return handler

    def _lock(self) -> IO[str]:
        handle = (self.run_dir / "dev.lock").open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise DevError(f"another occ dev is running with home {self.home}") from None
        return handle

    # -- start-up ------------------------------------------------------------------------------

    def _start(self) -> None:
        listener = self._listener()  # first: a taken port fails before anything starts
        try:
            env = self._base_env()
            self._database(env)
            self._broker(env)
            settings = self.settings = Settings.from_env(env)
            logger.info("migrating the database")
            try:
                schema.upgrade(settings.owner_database_url)
            except Exception as exc:
                raise DevError(f"the migration failed: {_first_line(exc)}") from exc
            self._bootstrap(settings)
            self._spawn_all(env, listener)
        finally:
            listener.close()
        self._write_pids()

    def _base_env(self) -> dict[str, str]:
        env = dict(self.environ)
        env.pop("REMAP_SIGTERM", None)  # occ dev wants Celery's warm shutdown on SIGTERM
        for name, value in self._secrets().items():
            env.setdefault(name, value)
        env["OCC_LOCAL_ROOT"] = str(self.home / "local")
        env["OCC_COMPUTE_DRIVER"] = self.options.compute or env.get("OCC_COMPUTE_DRIVER") or "local"
        if env.get("OCC_CONFIG_PATH"):
            env["OCC_CONFIG_PATH"] = str(Path(env["OCC_CONFIG_PATH"]).resolve())
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _secrets(self) -> dict[str, str]:
        """The generated pepper and secret key, created once in ``<home>/secrets.env`` (0600)."""
        path = self.home / "secrets.env"
        if not path.exists():
            text = "".join(f"{name}={secrets.token_hex(32)}\n" for name in SECRET_NAMES)
            devservices.write_private(path, text)
        values: dict[str, str] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            name, sep, value = line.strip().partition("=")
            if sep and name in SECRET_NAMES and value:
                values[name] = value
        missing = [name for name in SECRET_NAMES if name not in values]
        if missing:
            raise DevError(f"{path} lacks {', '.join(missing)}; delete it to generate new ones")
        return values

    def _database(self, env: dict[str, str]) -> None:
        if env.get("OCC_DATABASE_URL"):
            logger.info("using the database from OCC_DATABASE_URL")
            return
        logger.info("starting the embedded PostgreSQL in %s", self.home / "pg")
        self.postgres = devservices.EmbeddedPostgres(self.home / "pg")
        try:
            self.postgres.start()
            self.postgres.ensure_database(DATABASE_NAME)
        except devservices.ServiceError as exc:
            raise DevError(str(exc)) from exc
        except Exception as exc:
            raise DevError(f"the embedded PostgreSQL failed: {_first_line(exc)}") from exc
        # trust authentication on the socket: occ_app (created by the migration) needs no password
        env["OCC_MIGRATION_DATABASE_URL"] = self.postgres.url(DATABASE_NAME)
        env["OCC_DATABASE_URL"] = self.postgres.url(DATABASE_NAME, APP_ROLE)

    def _broker(self, env: dict[str, str]) -> None:
        given = env.get("OCC_BROKER_URL")
        if given and not given.startswith("filesystem://"):
            logger.info("using the broker from OCC_BROKER_URL")
            return
        binary = None if given else devservices.redis_server_binary()
        if binary is not None:
            self.redis = devservices.RedisProcess(
                binary, self.home / "redis", self.logs / "redis.log"
            )
            try:
                self.redis.start()
            except devservices.ServiceError as exc:
                raise DevError(str(exc)) from exc
            env["OCC_BROKER_URL"] = self.redis.url
            return
        if not given:
            _warn(
                f"no redis-server found: using kombu's filesystem:// broker under "
                f"{self.home / 'broker'} (polls every second: slower than Redis)"
            )
        env["OCC_BROKER_URL"] = given or "filesystem://"
        self.cwd = self._filesystem_broker()

    def _filesystem_broker(self) -> Path:
        """The children's working directory, holding kombu's default (relative) folders."""
        folder = self.home / "broker"
        (folder / "data_in").mkdir(parents=True, exist_ok=True)
        (folder / "control").mkdir(exist_ok=True)
        out = folder / "data_out"
        if not out.is_symlink():  # writers and readers must share one folder
            out.symlink_to("data_in")
        return folder

    def _bootstrap(self, settings: Settings) -> None:
        """``occ bootstrap --if-missing`` in-process, keeping the key in ``<home>/admin.key``.

        A key is minted (and the file replaced) when the Installation is new, when a bootstrap
        was interrupted before its key, or when the file is missing or holds no live key; the
        last case mints through the administrator's own, audited, ``api_keys.create``.
        """
        database = Database(settings.database_url, pool_size=1, application_name="occ-dev")
        pepper = settings.api_key_pepper
        try:
            result = installation.bootstrap_installation(
                database, name="occ", admin_name="administrator"
            )
            admin = result.admin_principal_id
            if admin is None:
                raise DevError("the installation has no administrator to mint a key for")
            minted = principals.issue_first_key(database, principal_id=admin, pepper=pepper)
            if minted is None:
                if self.key_file.exists() and self._key_works(database, pepper):
                    logger.info("installation exists; reusing %s", self.key_file)
                    return
                _warn(
                    f"{self.key_file} holds no live key of this installation: "
                    "minting a new administrator key"
                )
                minted = principals.mint_api_key(
                    database, actor_id=admin, principal_id=admin, pepper=pepper
                )
            devservices.write_private(self.key_file, minted.key + "\n", replace=True)
            logger.info("administrator key %s written to %s", minted.id, self.key_file)
        except DevError:
            raise
        except Exception as exc:
            raise DevError(f"the bootstrap failed: {_first_line(exc)}") from exc
        finally:
            database.dispose()

    def _key_works(self, database: Database, pepper: str) -> bool:
        presented = self.key_file.read_text(encoding="utf-8").strip()
        with database.snapshot() as session:
            return api_keys.verify(session, presented=presented, pepper=pepper) is not None

    def _listener(self) -> socket.socket:
        """The API's listening socket, bound here so that port 0 and conflicts are exact."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.options.port))
        except OSError as exc:
            sock.close()
            raise DevError(
                f"cannot listen on 127.0.0.1:{self.options.port}: {exc.strerror}"
            ) from exc
        sock.listen(128)
        self.port = int(sock.getsockname()[1])
        return sock

    def _spawn_all(self, env: dict[str, str], listener: socket.socket) -> None:
        for stale in self.run_dir.glob("*.ready"):
            stale.unlink()
        python = sys.executable
        celery = [python, "-m", "celery", "-A", "occ.tasks.app"]
        fd = listener.fileno()
        gunicorn = [
            python,
            "-m",
            "gunicorn",
            "occ.web.app:create_app()",
            "--bind",
            f"fd://{fd}",
            "--workers",
            "2",
            "--graceful-timeout",
            "10",
        ]
        if devservices.package_version("gunicorn") >= (25, 1):
            gunicorn.append("--no-control-socket")  # else one shared socket under $HOME
        self._spawn("api", gunicorn, env, pass_fds=(fd,))
        # prefork on kombu's polling transports (filesystem) hangs at shutdown in billiard's
        # pool teardown; threads are the other pool the driver tasks support
        drivers_pool = "threads" if env["OCC_BROKER_URL"].startswith("filesystem:") else "prefork"
        for name, queue, pool in (
            ("control", "occ.control", "threads"),
            ("drivers", "occ.drivers", drivers_pool),
        ):
            worker_env = dict(env, OCC_WORKER_READINESS_PATH=str(self._marker(name)))
            self._spawn(
                name,
                [
                    *celery,
                    "worker",
                    "-Q",
                    queue,
                    "-P",
                    pool,
                    "-c",
                    "2",
                    "-n",
                    f"{name}@%h",
                    "-l",
                    "INFO",
                    "--without-gossip",
                    "--without-mingle",
                ],
                worker_env,
            )
        self._spawn(
            "beat",
            [
                *celery,
                "beat",
                "-S",
                "celery.beat:Scheduler",
                "--schedule",
                str(self.home / "beat-schedule"),
                "-l",
                "INFO",
            ],
            env,
        )

    def _spawn(
        self, name: str, argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = ()
    ) -> None:
        child = devservices.ChildProcess(
            name, argv, log=self.logs / f"{name}.log", env=env, cwd=self.cwd, pass_fds=pass_fds
        )
        self.children[name] = child
        logger.info("started %s (pid %s)", name, child.pid)

    def _marker(self, name: str) -> Path:
        return self.run_dir / f"{name}.ready"

    def _write_pids(self) -> None:
        pids: dict[str, int] = {"dev": os.getpid()}
        if self.postgres is not None and self.postgres.pid is not None:
            pids["postgres"] = self.postgres.pid
        if self.redis is not None and self.redis.child is not None:
            pids["redis"] = self.redis.child.pid
        pids.update({name: child.pid for name, child in self.children.items()})
        devservices.write_private(
            self.run_dir / "dev.pids", json.dumps(pids, indent=2) + "\n", replace=True
        )

    # -- readiness and watching ----------------------------------------------------------------

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.options.ready_timeout
        waiting = {"api", *WORKERS}
        pinged: dict[str, float] = {}
        settings, cwd = self.settings, self.cwd
        assert settings is not None
        pinger = devservices.CeleryPinger(lambda: _celery_app(settings, cwd))
        try:
            while waiting and not self.signals:
                self._check_children("before it was ready")
                if "api" in waiting and self._api_ready():
                    waiting.discard("api")
                for name in [name for name in WORKERS if name in waiting]:
                    if self._marker(name).exists():
                        waiting.discard(name)
                    elif name in pinged and time.monotonic() - pinged[name] > MARKER_GRACE_S:
                        logger.warning(
                            "%s answers ping but wrote no readiness marker; accepting the ping",
                            name,
                        )
                        waiting.discard(name)
                missing = [name for name in WORKERS if name in waiting and name not in pinged]
                if missing:
                    now = time.monotonic()
                    for node in pinger.answering():
                        pinged.setdefault(node, now)
                if time.monotonic() > deadline:
                    raise DevError(
                        f"not ready after {self.options.ready_timeout:.0f} s "
                        f"(waiting for {', '.join(sorted(waiting))}); "
                        f"see {self.logs}"
                    )
                time.sleep(0.2)
        finally:
            pinger.close()
        self.ready = not waiting

    def _api_ready(self) -> bool:
        try:
            with urllib.request.urlopen(  # noqa: S310 - our own loopback URL
                f"{self.api_url}/readyz", timeout=2
            ) as response:
                return int(response.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _announce(self) -> None:
        line = {"event": "dev.ready", "apiUrl": self.api_url, "adminKeyFile": str(self.key_file)}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        logger.info("ready: %s", self.api_url)

    def _watch(self) -> None:
        while not self.signals:
            self._check_children("unexpectedly")
            time.sleep(0.2)

    def _check_children(self, when: str) -> None:
        for child in self.children.values():
            code = child.poll()
            if code is not None:
                raise DevError(
                    f"the {child.name} process {devservices.describe_exit(code)} "
                    f"{when}; see {child.log}"
                )

    # -- shutdown ------------------------------------------------------------------------------

    def _stop(self) -> bool:
        """Stop children, Redis and PostgreSQL; False if something had to be killed or stayed."""
        clean = True
        if self.children:
            logger.info("stopping")
            # no new claims first (beat, control, API), then the driver worker takes what was
            # already dispatched and its warm shutdown releases every claim it holds
            self._terminate("beat", "api", "control")
            clean &= self._wait_for("control", deadline=time.monotonic() + STOP_TIMEOUT_S)
            self._drain()
            self._terminate("drivers")
            deadline = time.monotonic() + STOP_TIMEOUT_S
            for name in self.children:
                if name != "control":
                    clean &= self._wait_for(name, deadline)
        clean &= self._stop_gateways()
        if self.redis is not None:
            clean &= self.redis.stop()
        if self.postgres is not None:
            logger.info("stopping the embedded PostgreSQL")
            clean &= self.postgres.stop()
        for path in (self.run_dir / "dev.pids", *self.run_dir.glob("*.ready")):
            path.unlink(missing_ok=True)
        if not clean:
            _warn(f"some processes did not stop in time and were killed; see {self.logs}")
        return clean

    def _stop_gateways(self) -> bool:
        """Stop the local gateway processes the workers started (they run in sessions of their
        own, so they would outlive ``occ dev``); a later deploy starts them again."""
        driver = local.LocalComputeDriver(self.home / "local")
        pids = driver.gateway_processes()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and driver.gateway_processes():
            time.sleep(0.1)
        left = driver.gateway_processes()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return not left

    def _terminate(self, *names: str) -> None:
        for name in names:
            if name in self.children:
                self.children[name].terminate()

    def _wait_for(self, name: str, deadline: float) -> bool:
        """Wait for the child and its whole process group; SIGKILL them at the deadline."""
        child = self.children.get(name)
        if child is None:
            return True
        if child.wait_stopped(deadline, give_up=lambda: len(self.signals) >= 2):
            logger.info("%s stopped (%s)", name, devservices.describe_exit(child.poll() or 0))
            return True
        logger.warning("%s did not stop in time: killed its process group", name)
        return False

    def _drain(self) -> None:
        """Give the driver worker a moment to take run_work messages already dispatched."""
        broker = self.settings.broker_url if self.settings is not None else ""
        drivers = self.children.get("drivers")
        if (
            not broker.startswith(("redis://", "rediss://"))
            or drivers is None
            or drivers.poll() is not None
        ):
            return
        import redis  # noqa: PLC0415

        client = redis.Redis.from_url(broker, socket_timeout=1, socket_connect_timeout=1)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        try:
            while time.monotonic() < deadline and len(self.signals) < 2:
                if not client.llen("occ.drivers"):
                    return
                time.sleep(0.1)
        except redis.RedisError:
            return
        finally:
            client.close()


def _celery_app(settings: Settings, cwd: Path) -> Any:
    """A Celery app on the children's broker, for ``ping`` (the readiness fallback)."""
    from occ.tasks import app as tasks_app  # noqa: PLC0415 - only for the fallback

    app = tasks_app.create(settings)
    if settings.broker_url.startswith("filesystem://"):
        options = dict(app.conf.broker_transport_options or {})
        folder = str(cwd / "data_in")
        options.update(
            data_folder_in=folder, data_folder_out=folder, control_folder=str(cwd / "control")
        )
        app.conf.broker_transport_options = options
    return app


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _error(message: str) -> None:
    sys.stderr.write(f"occ: error: {' '.join(message.split())}\n")
    sys.stderr.flush()


def _warn(message: str) -> None:
    logger.warning(message)
    sys.stderr.write(f"occ: warning: {' '.join(message.split())}\n")
    sys.stderr.flush()
