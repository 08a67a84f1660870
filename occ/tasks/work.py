"""The Celery tasks (``occ.claim``, ``occ.recover_stale``, ``occ.run_work``) and worker life cycle.

Task bodies are thin: they call ``occ.reconcile.executor`` with this process's ``Worker``.
Start-up validates settings, requires a bootstrapped Installation and runs the Compute
Driver's preflight before the readiness marker is written; warm shutdown aborts in-flight
effects so their claims are released with the attempt refunded.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Final

from celery import Celery, signals

from occ import errors, metrics, observability, runtime
from occ.config import Settings
from occ.drivers import compute
from occ.drivers.compute import base
from occ.reconcile import executor
from occ.state import installation, work_queue
from occ.tasks import names

EXIT_NOT_READY: Final = 3
"""Exit status of a worker whose start-up checks failed (settings, bootstrap, preflight)."""

SHORT_DEFERRAL_MS: Final = 30_000
"""A requeue due within this long sends its own delayed nudge (beat stays the backstop)."""

_process: dict[str, Any] = {}
_shutdown = threading.Event()


def register(app: Celery) -> None:
    """Define occ's tasks on ``app``."""

    @app.task(name=names.CLAIM, ignore_result=True)
    def claim() -> int:
        worker = _worker(app)
        claims = executor.claim_batch(
            worker.database, worker.policy, max_in_flight=_settings(app).max_in_flight
        )
        unsent = []
        for item in claims:
            try:
                app.send_task(
                    names.RUN_WORK,
                    args=[item.work_id, str(item.token)],
                    queue=names.DRIVER_QUEUE,
                    retry=False,
                    argsrepr=repr([item.work_id, "<dispatch token>"]),
                    expires=worker.policy.dispatch_lease_ms / 1000,
                )
            except Exception as exc:  # the claim goes back to the queue
                observability.log(
                    "worker.error",
                    level=logging.ERROR,
                    code="WORKER_UNAVAILABLE",
                    error=type(exc).__name__,
                    workId=item.work_id,
                )
                unsent.append(item)
        if unsent:
            executor.release_dispatches(worker.database, unsent)
        return len(claims) - len(unsent)

    @app.task(name=names.RECOVER_STALE, ignore_result=True)
    def recover_stale() -> int:
        worker = _worker(app)
        report = executor.recover(worker.database, worker.policy)
        if report.requeued:
            _nudge(app)
            later = report.next_available_in_ms
            if later and later <= SHORT_DEFERRAL_MS:
                _nudge(app, countdown_s=later / 1000 + 0.05)
        return report.recovered + len(report.exhausted)

    @app.task(name=names.RUN_WORK, ignore_result=True)
    def run_work(work_id: str, dispatch_token: str) -> str | None:
        result = executor.run(_worker(app), work_id, dispatch_token)
        if result is None:
            return None
        if result.retry_in_ms is not None and 0 < result.retry_in_ms <= SHORT_DEFERRAL_MS:
            _nudge(app, countdown_s=result.retry_in_ms / 1000)
        _nudge_after_completion(app)
        return result.code


COMPLETION_NUDGE_GAP_S: Final = 0.1
"""A pool process sends at most one completion nudge per gap (a later one is delayed to the end
of the gap), so a draining backlog runs batch claims instead of one claim per item."""

_completion_nudges = {"sent": 0.0, "delayed_until": 0.0}


def _nudge_after_completion(app: Celery) -> None:
    now = time.monotonic()
    if now - _completion_nudges["sent"] >= COMPLETION_NUDGE_GAP_S:
        _completion_nudges["sent"] = now
        _nudge(app)
    elif _completion_nudges["delayed_until"] <= now:
        due = _completion_nudges["sent"] + COMPLETION_NUDGE_GAP_S
        _completion_nudges["delayed_until"] = due
        _nudge(app, countdown_s=max(due - now, 0.0))


def _settings(app: Celery) -> Settings:
    settings: Settings = app.conf["occ_settings"]
    return settings


def _worker(app: Celery) -> executor.Worker:
    """This process's worker (built after fork, once)."""
    if _process.get("pid") != os.getpid():
        settings = _settings(app)
        built = runtime.build(
            settings,
            pool_size=3,
            application_name="occ-worker",
            statement_timeout_ms=min(settings.database_timeout_ms, settings.lease_ms),
        )
        _process.update(
            pid=os.getpid(),
            worker=executor.Worker(
                database=built.database,
                policy=built.policy,
                driver=compute.load(settings.compute_driver, settings),
                shutdown=_shutdown,
                settings=settings,
            ),
        )
    worker: executor.Worker = _process["worker"]
    return worker


def _nudge(app: Celery, countdown_s: float | None = None) -> None:
    try:
        app.send_task(
            names.CLAIM,
            queue=names.CONTROL_QUEUE,
            retry=False,
            countdown=countdown_s,
            expires=None if countdown_s is None else countdown_s + 30,
        )
    except Exception as exc:  # beat claims anyway
        observability.log(
            "worker.error",
            level=logging.WARNING,
            code="WORKER_UNAVAILABLE",
            error=type(exc).__name__,
        )


# -- life cycle ---------------------------------------------------------------------------------


def _readiness_path(app: Celery) -> Path | None:
    path = _settings(app).worker_readiness_path
    return Path(path) if path else None


def connect_signals(app: Celery) -> None:
    """Wire start-up checks, readiness and warm shutdown to Celery's worker signals."""

    @signals.worker_init.connect(weak=False)
    def check_before_start(sender: Any = None, **_: Any) -> None:
        if sender is not None and getattr(sender, "app", app) is not app:
            return
        observability.configure("occ-worker")
        pool = getattr(sender, "pool_cls", "")
        pool_name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
        if "thread" in pool_name:
            # a threads pool never wakes the consumer when a task ends: with prefetch disabled
            # it would sleep out the broker poll (1 s) between short control tasks
            app.conf.worker_disable_prefetch = False
        path = _readiness_path(app)
        if path is not None:
            path.unlink(missing_ok=True)
        try:
            worker = _worker(app)
            with worker.database.snapshot() as session:
                if installation.current(session) is None:
                    raise errors.DependencyUnavailable(
                        "the installation is not bootstrapped: run `occ bootstrap` first"
                    )
            worker.driver.preflight()
        except (errors.OccError, base.DriverError) as exc:
            # Celery logs and swallows exceptions from signal handlers: exit explicitly
            detail = exc.detail if isinstance(exc, errors.OccError) else str(exc)
            observability.log(
                "worker.error",
                level=logging.ERROR,
                code="WORKER_UNAVAILABLE",
                error=type(exc).__name__,
                reason=detail,
            )
            raise SystemExit(EXIT_NOT_READY) from None
        finally:
            _process.clear()  # connections are not shared with forked pool processes

    @signals.worker_ready.connect(weak=False)
    def announce(sender: Any = None, **_: Any) -> None:
        settings = _settings(app)
        observability.log("worker.started", pid=os.getpid(), computeDriver=settings.compute_driver)
        if settings.metrics_port:
            metrics.serve(settings.metrics_port, _worker(app).database)
        path = _readiness_path(app)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(os.getpid()), encoding="utf-8")
        threading.Thread(target=_report_health, args=(app,), name="occ-health", daemon=True).start()

    @signals.worker_process_init.connect(weak=False)
    def child_started(**_: Any) -> None:
        # a pool process aborts its effect (and releases its claim) on SIGTERM or SIGUSR2
        for number in (signal.SIGTERM, signal.SIGUSR2):
            signal.signal(number, _interrupt)

    @signals.worker_shutting_down.connect(weak=False)
    def shutting_down(**_: Any) -> None:
        _shutdown.set()
        for pid in _children():
            try:
                os.kill(pid, signal.SIGUSR2)
            except ProcessLookupError:
                continue

    @signals.worker_shutdown.connect(weak=False)
    def stopped(**_: Any) -> None:
        path = _readiness_path(app)
        if path is not None:
            path.unlink(missing_ok=True)
        observability.log("worker.stopped", pid=os.getpid())


HEALTH_INTERVAL_S: Final = 60.0


def _report_health(app: Celery) -> None:
    """``worker.health`` every minute: this worker is alive and how much work is pending."""
    while not _shutdown.wait(HEALTH_INTERVAL_S):
        try:
            with _worker(app).database.snapshot() as session:
                pending = work_queue.pending(session)
        except errors.OccError as exc:
            observability.log(
                "worker.error", level=logging.WARNING, code="HEALTH_UNAVAILABLE", error=exc.code
            )
            continue
        observability.log("worker.health", pid=os.getpid(), count=pending)


def _interrupt(number: int, frame: Any) -> None:
    _shutdown.set()


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
