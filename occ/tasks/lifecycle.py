"""The life cycle of a Celery worker process: start-up checks, readiness, warm shutdown.

Wires Celery's worker and beat signals to the app's ``WorkerProcess``. Start-up checks the settings,
waits (bounded, ``occ.runtime.startup``) for a migrated, bootstrapped database and runs the Compute
Driver's preflight before the readiness marker is written; beat waits for the database the same way.
When a check fails it logs ``worker.startup-error`` (``beat.startup-error``: the error's class and
reason, never a secret) and exits with ``EXIT_NOT_READY``. Warm shutdown aborts in-flight effects so
their claims are released with the attempt refunded. The worker and beat also require their own
metrics directory (``occ.telemetry.metrics_directory``, claimed when ``occ.telemetry.metrics`` was
imported, before the pool forks), and a pool process that exits is marked dead there. No task is
defined here.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any, Final, NoReturn

from celery import Celery, signals

from occ.drivers.compute import base
from occ.foundation import errors
from occ.runtime import composition, gauges, startup
from occ.settings.config import Settings
from occ.tasks import worker_process
from occ.telemetry import metrics, metrics_directory, observability

EXIT_NOT_READY: Final = startup.EXIT_NOT_READY
"""Exit status of a worker whose start-up checks failed (settings, wait, preflight)."""


_OWN_CODES: Final = (errors.SchemaTooNew, errors.EnvironmentNotSet)
"""Start-up errors logged with their own code: what the operator must do differs."""


def settings_from_env() -> Settings:
    """The settings of a Celery process; on invalid settings, log and exit ``EXIT_NOT_READY``."""
    try:
        settings = Settings.from_env()
    except errors.OccError as exc:
        observability.configure("occ-worker")
        fail_startup(exc)
    warn_about(settings)
    return settings


def warn_about(settings: Settings) -> None:
    """Log ``settings.warning`` once per doubtful setting (its name, never its value)."""
    warnings = settings.startup_warnings()
    if warnings:
        observability.configure(observability.service(), settings.log_level)
    for warning in warnings:
        observability.log(
            "settings.warning",
            level=logging.WARNING,
            code="SETTING_DOUBTFUL",
            reason=f"{warning.pointer}: {warning.message}",
        )


def fail_startup(exc: BaseException, event: str = "worker.startup-error") -> NoReturn:
    """Log ``event`` for ``exc`` and exit with ``EXIT_NOT_READY``."""
    observability.log(
        event,
        level=logging.ERROR,
        code=exc.code if isinstance(exc, _OWN_CODES) else "WORKER_UNAVAILABLE",
        error=type(exc).__name__,
        reason=startup_reason(exc),
    )
    # Celery logs and swallows exceptions from signal handlers: exit explicitly
    raise SystemExit(EXIT_NOT_READY) from None


def startup_reason(exc: BaseException) -> str:
    """What failed, in words occ wrote: an error's detail, a driver's code and reason.

    Any other exception shows only its class: its message is not ours and might hold a secret.
    """
    if isinstance(exc, errors.InvalidInput) and exc.errors:
        return "; ".join(f"{field.pointer}: {field.message}" for field in exc.errors)
    if isinstance(exc, errors.OccError):
        return exc.detail
    if isinstance(exc, base.DriverError):
        return f"{exc.code}: {exc.reason}" if exc.reason else exc.code
    return f"unexpected {type(exc).__name__} during the start-up checks"


def check_before_start(process: worker_process.WorkerProcess) -> None:
    """Require the program's metrics directory, wait for a migrated, bootstrapped database,
    then require the driver's preflight."""
    metrics_directory.require_claimed()
    worker = process.worker()
    startup.wait_until_ready(worker.database, timeout_s=process.settings.startup_wait_ms / 1000)
    worker.driver.preflight()


def wait_before_beat(settings: Settings) -> None:
    """Wait for a migrated, bootstrapped database before beat sends its first task."""
    metrics_directory.require_claimed()
    built = composition.build(settings, pool_size=1, application_name="occ-beat")
    try:
        startup.wait_until_ready(built.database, timeout_s=settings.startup_wait_ms / 1000)
    finally:
        built.database.dispose()


def log_started(process: worker_process.WorkerProcess) -> None:
    """``worker.started``: the Compute Driver, the Sandbox Driver and the hook owners selected."""
    selection = process.selection()
    observability.log(
        "worker.started",
        pid=os.getpid(),
        computeDriver=selection.compute_driver,
        sandboxDriver=selection.sandbox_driver,
        hookOwners=",".join(selection.hook_owners) or None,
    )


def connect_signals(app: Celery) -> None:
    """Wire start-up checks, readiness and warm shutdown of ``app``'s worker process."""
    process = worker_process.of(app)

    def on_worker_init(sender: Any = None, **_: Any) -> None:
        if sender is not None and getattr(sender, "app", app) is not app:
            return
        observability.configure("occ-worker", process.settings.log_level)
        pool = getattr(sender, "pool_cls", "")
        pool_name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
        if "thread" in pool_name:
            # a threads pool never wakes the consumer when a task ends: with prefetch disabled
            # it would sleep out the broker poll (1 s) between short control tasks
            app.conf.worker_disable_prefetch = False
        process.clear_ready()
        try:
            check_before_start(process)
        except Exception as exc:
            fail_startup(exc)
        finally:
            process.forget_worker()  # connections are not shared with forked pool processes

    def on_beat_init(sender: Any = None, **_: Any) -> None:
        if sender is not None and getattr(sender, "app", app) is not app:
            return
        observability.configure("occ-beat", process.settings.log_level)
        try:
            wait_before_beat(process.settings)
        except Exception as exc:
            fail_startup(exc, "beat.startup-error")

    def on_worker_ready(sender: Any = None, **_: Any) -> None:
        settings = process.settings
        log_started(process)
        if settings.metrics_port:
            metrics.serve(
                settings.metrics_port,
                gauges.reader(process.worker().database, settings.compute_driver),
                address=settings.metrics_address,
            )
        process.mark_ready()
        process.start_health_reporter()

    def on_pool_process_init(**_: Any) -> None:
        # a pool process aborts its effect (and releases its claim) on SIGTERM or SIGUSR2
        def interrupt(number: int, frame: Any) -> None:
            process.request_shutdown()

        for number in (signal.SIGTERM, signal.SIGUSR2):
            signal.signal(number, interrupt)

    def on_shutting_down(**_: Any) -> None:
        process.request_shutdown()
        for pid in _children():
            try:
                os.kill(pid, signal.SIGUSR2)
            except ProcessLookupError:
                continue

    def on_shutdown(**_: Any) -> None:
        process.clear_ready()
        observability.log("worker.stopped", pid=os.getpid())

    signals.worker_init.connect(on_worker_init, weak=False)
    signals.worker_ready.connect(on_worker_ready, weak=False)
    signals.beat_init.connect(on_beat_init, weak=False)
    signals.worker_process_init.connect(on_pool_process_init, weak=False)
    signals.worker_shutting_down.connect(on_shutting_down, weak=False)
    signals.worker_shutdown.connect(on_shutdown, weak=False)


def _forget_pool_process(**_: Any) -> None:
    """In a pool process that exits: drop its live gauges from the metrics directory."""
    metrics_directory.mark_dead(os.getpid())


# for every app: it only acts on this process's own claimed metrics directory
signals.worker_process_shutdown.connect(
    _forget_pool_process, weak=False, dispatch_uid="occ.telemetry.metrics_directory"
)


def _children() -> list[int]:
    """Pids of this process's children (the prefork pool)."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8")
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("PPid:") and line.split()[1] == me:
                found.append(int(entry.name))
                break
    return found
