"""The run of ``occ dev``: start-up in order, readiness, supervision, and the stop of everything.

Start-up: the API's socket (a taken port fails first, then Flower's with ``--flower``), the
environment of the children, the embedded PostgreSQL and Redis, the migration and bootstrap,
then the fleet (and Flower). It waits until the API, both workers (and Flower) are ready, prints
the ``dev.ready`` line and supervises the fleet (children that exit are restarted) until Ctrl-C
or SIGTERM, or until a child fails its start-up checks too often; then it stops the fleet in
order, the local gateways, Redis and PostgreSQL.

Like every entry point, the runner hands the environment it was started with to its children;
it reads it only to build theirs (``Settings.from_env`` of that environment validates it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from pathlib import Path
from types import FrameType
from typing import Final

from occ.dev import (
    bootstrap,
    broker,
    children,
    errors,
    fleet,
    flower,
    home,
    logs,
    options,
    postgres,
    readiness,
    terminal,
)
from occ.drivers.compute import local
from occ.foundation import errors as foundation_errors
from occ.settings.config import Settings
from occ.tasks import names

logger = logging.getLogger("occ.dev")

STOP_TIMEOUT_S: Final = 30.0
DRAIN_TIMEOUT_S: Final = 5.0
GATEWAY_STOP_TIMEOUT_S: Final = 10.0
SUPERVISION_INTERVAL_S: Final = 0.2
QUIET_LOGGERS: Final = ("pgserver", "alembic", "kombu", "celery", "amqp")


class Runner:
    """One run of ``occ dev`` with ``environ`` as the children's base environment."""

    def __init__(self, run_options: options.DevOptions, environ: dict[str, str]) -> None:
        self.options = run_options
        self.environ = environ
        self.layout = home.Home.at(run_options.home)
        self.postgres: postgres.EmbeddedPostgres | None = None
        self.broker: broker.Broker | None = None
        self.fleet: fleet.Fleet | None = None
        self.listener: socket.socket | None = None
        self.settings: Settings | None = None
        self.log_limits = logs.Limits()
        self.signals: list[int] = []
        self.raise_on_signal = True
        self.ready = False
        self.port = run_options.port

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self) -> int:
        """Run until stopped; 0 after a requested stop, 128 + signal before ready, 1 on failure."""
        self.layout.create()
        try:
            lock = home.lock(self.layout)
        except errors.DevError as exc:
            terminal.error(str(exc))
            return 1
        self.log_limits = _log_limits(self.environ)
        handler = _log_to_file(self.layout.log("dev"), self.log_limits)
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        code, failure = 0, None
        try:
            self._start()
            self.raise_on_signal = False
            self._wait_until_ready()
            if not self.signals:
                terminal.announce_ready(
                    self.api_url,
                    str(self.layout.key_file),
                    str(self.layout.sign_in_link),
                    self._own_broker_url(),
                    self._flower(),
                )
                self._watch()
            code = 0 if self.ready else 128 + self.signals[0]
        except errors.Interrupted:
            code = 128 + self.signals[0]
        except errors.DevError as exc:
            code, failure = 1, str(exc)
        finally:
            self.raise_on_signal = False
            if not self._stop():
                code = code or 1
            if failure is not None:
                terminal.error(failure)  # the last line: why the product stopped
            for sig, previous_handler in previous.items():
                signal.signal(sig, previous_handler)
            logging.getLogger().removeHandler(handler)
            handler.close()
            lock.close()
        return code

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        logger.info("signal %s received", signal.Signals(signum).name)
        if self.raise_on_signal:
            self.raise_on_signal = False
            raise errors.Interrupted

    # -- start-up ---------------------------------------------------------------------------

    def _start(self) -> None:
        self.listener = self._listen()  # first: a taken port fails before anything starts
        flower_port = self.options.flower_port
        if flower_port is not None:
            flower.check_port(flower_port)
        env = self._base_env()
        self.postgres = postgres.start_for(self.layout.root / "pg", env)
        redis_log = logs.RotatingLog.limited(self.layout.log("redis"), self.log_limits)
        self.broker = broker.start_for(self.layout.root, redis_log, self.layout.run, env)
        settings = self.settings = Settings.from_env(env)
        bootstrap.migrate(settings)
        bootstrap.bootstrap(settings, self.layout.key_file)
        bootstrap.sign_in_link(settings, self.layout.sign_in_link)
        home.empty_metrics(self.layout)
        specs = children.specs(
            layout=self.layout,
            env=env,
            cwd=self.broker.cwd,
            listener_fd=self.listener.fileno(),
            # from their start: Flower's own request to send events comes seconds later, and
            # the work of those first seconds would never show
            task_events=flower_port is not None,
        )
        if flower_port is not None:
            basic_auth = flower.credential(self.layout)
            specs.append(
                flower.spec(env=env, cwd=self.broker.cwd, port=flower_port, basic_auth=basic_auth)
            )
        self.fleet = fleet.Fleet(specs, self.layout.logs, log_limits=self.log_limits)
        self.fleet.start()
        self._write_pids()

    def _listen(self) -> socket.socket:
        """The API's socket, bound here (port 0 and conflicts are exact) and kept open while
        occ dev runs, so that a restarted API serves the same port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.options.port))
        except OSError as exc:
            sock.close()
            raise errors.DevError(
                f"cannot listen on 127.0.0.1:{self.options.port}: {exc.strerror}"
            ) from exc
        sock.listen(128)
        self.port = int(sock.getsockname()[1])
        return sock

    def _base_env(self) -> dict[str, str]:
        env = dict(self.environ)
        env.pop("REMAP_SIGTERM", None)  # occ dev wants Celery's warm shutdown on SIGTERM
        for name, value in home.generated_secrets(self.layout).items():
            env.setdefault(name, value)
        env.setdefault("OCC_ENV", "development")  # the one launcher that may assume it
        env.setdefault("OCC_AUTH_SECRET", home.auth_secret(self.layout))
        env.setdefault("OCC_AUTH_BASE_URL", self.api_url)
        env["OCC_LOCAL_ROOT"] = str(self.layout.root / "local")
        if env.get("OCC_ENV", "development") != "production":
            # the stand-in account Backend, shared by the API and the workers through its home
            env.setdefault("OCC_ACCOUNT_BACKEND", "standin")
            env.setdefault("OCC_ACCOUNT_BACKEND_ROOT", str(self.layout.root / "accounts"))
        env["OCC_COMPUTE_DRIVER"] = self.options.compute or env.get("OCC_COMPUTE_DRIVER") or "local"
        env["PYTHONUNBUFFERED"] = "1"
        return children.anchored(env, Path.cwd())

    def _own_broker_url(self) -> str | None:
        """The URL of the Redis occ dev runs (loopback, no password), else ``None``: a broker
        named by ``OCC_BROKER_URL`` may carry credentials and is never printed."""
        redis = None if self.broker is None else self.broker.redis
        return None if redis is None or redis.port is None else redis.url

    def _flower(self) -> tuple[str, str] | None:
        """Flower's URL and its credential's file, when occ dev runs it."""
        port = self.options.flower_port
        return None if port is None else (flower.url(port), str(self.layout.flower_auth))

    def _write_pids(self) -> None:
        pids: dict[str, int] = {"dev": os.getpid()}
        if self.postgres is not None and self.postgres.pid is not None:
            pids["postgres"] = self.postgres.pid
        redis = None if self.broker is None else self.broker.redis
        if redis is not None and redis.child is not None:
            pids["redis"] = redis.child.pid
        if self.fleet is not None:
            pids.update(self.fleet.pids())
        home.write_pids(self.layout, pids)

    # -- readiness and supervision ----------------------------------------------------------

    def _wait_until_ready(self) -> None:
        settings, running = self.settings, self.broker
        assert settings is not None and running is not None
        deadline = time.monotonic() + self.options.ready_timeout
        pinger = readiness.CeleryPinger(lambda: readiness.celery_app(settings, running.cwd))
        markers = {name: self.layout.marker(name) for name in children.WORKERS}
        helpers = {}
        if self.options.flower_port is not None:
            flower_url = flower.url(self.options.flower_port)
            helpers[flower.NAME] = lambda: flower.ready(flower_url)
        checks = readiness.Readiness(self.api_url, markers, pinger, helpers)
        try:
            while not self.signals:
                self._supervise()
                waiting = checks.check()
                if not waiting:
                    self.ready = True
                    return
                if time.monotonic() > deadline:
                    raise errors.DevError(
                        f"not ready after {self.options.ready_timeout:.0f} s "
                        f"(waiting for {', '.join(sorted(waiting))}); see {self.layout.logs}"
                    )
                time.sleep(SUPERVISION_INTERVAL_S)
        finally:
            pinger.close()

    def _watch(self) -> None:
        while not self.signals:
            self._supervise()
            time.sleep(SUPERVISION_INTERVAL_S)

    def _supervise(self) -> None:
        assert self.fleet is not None
        if self.fleet.supervise():
            self._write_pids()

    # -- shutdown ---------------------------------------------------------------------------

    def _stop(self) -> bool:
        """Stop children, Redis and PostgreSQL; False if something had to be killed or stayed."""
        clean = True
        if self.fleet is not None:
            logger.info("stopping")
            clean &= self.fleet.stop(
                children.stop_stages(
                    self._drain,
                    beside=() if self.options.flower_port is None else (flower.NAME,),
                ),
                timeout_s=STOP_TIMEOUT_S,
                give_up=lambda: len(self.signals) >= 2,
            )
        if self.listener is not None:
            self.listener.close()
        clean &= self._stop_gateways()
        if self.broker is not None and self.broker.redis is not None:
            clean &= self.broker.redis.stop()
        if self.postgres is not None:
            logger.info("stopping the embedded PostgreSQL")
            clean &= self.postgres.stop()
        for path in (self.layout.pids_file, *self.layout.run.glob("*.ready")):
            path.unlink(missing_ok=True)
        if not clean:
            terminal.warn(
                f"some processes did not stop in time and were killed; see {self.layout.logs}"
            )
        return clean

    def _stop_gateways(self) -> bool:
        """Stop the local gateway processes the workers started (they run in sessions of their
        own, so they would outlive ``occ dev``); a later deploy starts them again."""
        driver = local.LocalComputeDriver(self.layout.root / "local")
        for pid in driver.gateway_processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + GATEWAY_STOP_TIMEOUT_S
        while time.monotonic() < deadline and driver.gateway_processes():
            time.sleep(0.1)
        left = driver.gateway_processes()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return not left

    def _drain(self) -> None:
        """Give the driver worker a moment to take run_work messages already dispatched."""
        broker_url = self.settings.broker_url if self.settings is not None else ""
        if (
            not broker_url.startswith(("redis://", "rediss://"))
            or self.fleet is None
            or not self.fleet.running(children.DRIVERS)
        ):
            return
        import redis  # noqa: PLC0415

        client = redis.Redis.from_url(broker_url, socket_timeout=1, socket_connect_timeout=1)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        try:
            while time.monotonic() < deadline and len(self.signals) < 2:
                if not client.llen(names.DRIVER_QUEUE):
                    return
                time.sleep(0.1)
        except redis.RedisError:
            return
        finally:
            client.close()


def _log_limits(environ: dict[str, str]) -> logs.Limits:
    """The rotation of occ dev's logs, from the settings in ``environ``; the defaults when they
    are invalid (the start-up, which reads them again, says why)."""
    try:
        return logs.Limits.of(Settings.from_env(environ, require=False))
    except foundation_errors.OccError:
        return logs.Limits()


def _log_to_file(path: Path, limits: logs.Limits) -> logging.Handler:
    """Send this process's log records to ``dev.log`` (appended, rotated), not the terminal."""
    handler = logs.file_handler(path, limits)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for noisy in QUIET_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return handler
