"""The state of one Celery worker process: its ``executor.Worker``, shutdown event and nudges.

``WorkerProcess`` selects the drivers and lifecycle hook owners once (``occ.drivers.selection``),
builds the ``executor.Worker`` (database, queue policy, Compute Driver with those hooks) once per
pid, after fork, owns the shutdown event that aborts in-flight effects, coalesces completion
nudges, writes and removes the readiness marker, and runs the ``worker.health`` reporter. One
is attached to each Celery app (``attach``/``of``), beside the app's ``Settings``
(``keep_settings``): neither is kept in the Celery configuration, which holds no credential.
It wires no Celery signal (that is ``occ.tasks.lifecycle``) and defines no task
(``occ.tasks.work``).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Final

from celery import Celery

from occ.drivers import selection as driver_selection
from occ.foundation import errors
from occ.reconcile import context, executor
from occ.runtime import composition
from occ.settings.config import Settings
from occ.state import observations, values, work_queue
from occ.state.db import Database
from occ.tasks import names
from occ.telemetry import observability

COMPLETION_NUDGE_GAP_S: Final = 0.25
"""A pool process sends at most one completion nudge per gap (a later one is delayed to the end
of the gap). A backlog is drained by ``occ.claim`` re-claiming itself; these nudges pick up what
it does not see coming, such as the next item of a lane whose claim just ended."""

HEALTH_INTERVAL_S: Final = 60.0
"""Period of ``worker.health``."""


def renewal_database(settings: Settings, policy: values.QueuePolicy) -> Database:
    """The pool lease renewals run on: every statement, and sent data left unacknowledged,
    time out after ``context.renewal_timeout_ms`` (a quarter of the lease), so a renewal
    that hangs fails before the next one is due."""
    timeout_ms = context.renewal_timeout_ms(policy)
    return Database(
        settings.database_url,
        pool_size=1,
        application_name="occ-renewals",
        statement_timeout_ms=timeout_ms,
        tcp_user_timeout_ms=timeout_ms,
        connect_timeout_s=max(math.ceil(timeout_ms / 1000), 2),
    )


class WorkerProcess:
    """What one worker process (and, after fork, each pool process) holds for ``app``."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.shutdown = threading.Event()
        self.health_interval_s = HEALTH_INTERVAL_S
        self._pid = 0
        self._worker: executor.Worker | None = None
        self._selection: driver_selection.Selection | None = None
        self._nudge_lock = threading.Lock()
        self._nudge_sent_at = 0.0
        self._nudge_delayed_until = 0.0

    @property
    def settings(self) -> Settings:
        return _SETTINGS[self.app]

    # -- the executor's worker ----------------------------------------------------------------

    def worker(self) -> executor.Worker:
        """This process's worker (built after fork, once per pid)."""
        if self._worker is None or self._pid != os.getpid():
            settings = self.settings
            built = composition.build(
                settings,
                pool_size=3,
                application_name="occ-worker",
                statement_timeout_ms=min(settings.database_timeout_ms, settings.lease_ms),
            )
            self._worker = executor.Worker(
                database=built.database,
                renewals=renewal_database(settings, built.policy),
                policy=built.policy,
                driver=driver_selection.compute_driver(settings, self.selection()),
                secrets=composition.secret_driver(settings),
                accounts=self.selection().accounts,
                shutdown=self.shutdown,
                settings=settings,
            )
            self._pid = os.getpid()
        return self._worker

    def selection(self) -> driver_selection.Selection:
        """The drivers and hook owners selected at startup (built once; ``InvalidInput`` when
        one is unavailable)."""
        if self._selection is None:
            self._selection = driver_selection.select(self.settings)
        return self._selection

    def forget_worker(self) -> None:
        """Drop the worker without closing it: forked pool processes must build their own
        connections, and closing the parent's would break theirs."""
        self._worker = None
        self._pid = 0

    def dispose(self) -> None:
        """Close this process's worker connections (tests, and a process that is done)."""
        if self._worker is not None and self._pid == os.getpid():
            self._worker.database.dispose()
            if self._worker.renewals is not None:
                self._worker.renewals.dispose()
            close = getattr(self._worker.driver, "close", None)
            if callable(close):  # a driver that keeps something open (a watch cache)
                close()
        self.forget_worker()

    def request_shutdown(self) -> None:
        """Abort in-flight effects: their claims are released with the attempt refunded."""
        self.shutdown.set()

    # -- nudges -------------------------------------------------------------------------------

    def nudge(self, countdown_s: float | None = None) -> None:
        """Ask the control queue to claim now (or after ``countdown_s``); beat is the backstop.

        A delayed nudge waits here, on this process's monotonic clock, and is then sent to run
        at once: a Celery countdown would be an ETA on this host's wall clock that the control
        worker reads on its own, so a skewed worker would hold the nudge by the skew.
        """
        if countdown_s is not None and countdown_s > 0:
            timer = threading.Timer(countdown_s, self.nudge)
            timer.daemon = True
            timer.start()
            return
        try:
            self.app.send_task(names.CLAIM, queue=names.CONTROL_QUEUE, retry=False)
        except Exception as exc:  # beat claims anyway
            observability.log(
                "worker.error",
                level=logging.WARNING,
                code="WORKER_UNAVAILABLE",
                error=type(exc).__name__,
            )

    def nudge_after_completion(self) -> None:
        """A nudge after a finished pass, at most one per ``COMPLETION_NUDGE_GAP_S``."""
        now = time.monotonic()
        with self._nudge_lock:
            if now - self._nudge_sent_at >= COMPLETION_NUDGE_GAP_S:
                self._nudge_sent_at = now
                countdown: float | None = None
            elif self._nudge_delayed_until <= now:
                due = self._nudge_sent_at + COMPLETION_NUDGE_GAP_S
                self._nudge_delayed_until = due
                countdown = max(due - now, 0.0)
            else:
                return  # a delayed nudge is already on its way
        self.nudge(countdown_s=countdown)

    # -- readiness and health -----------------------------------------------------------------

    @property
    def readiness_path(self) -> Path | None:
        path = self.settings.worker_readiness_path
        return Path(path) if path else None

    def mark_ready(self) -> None:
        path = self.readiness_path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(os.getpid()), encoding="utf-8")

    def clear_ready(self) -> None:
        path = self.readiness_path
        if path is not None:
            path.unlink(missing_ok=True)

    def start_health_reporter(self) -> threading.Thread:
        thread = threading.Thread(target=self.report_health, name="occ-health", daemon=True)
        thread.start()
        return thread

    def report_health(self) -> None:
        """``worker.health`` every interval until shutdown: alive, how much is pending, and
        how far behind the fleet was observed (``lagS``; absent before the first tick)."""
        while not self.shutdown.wait(self.health_interval_s):
            try:
                with self.worker().database.snapshot() as session:
                    pending = work_queue.pending(session)
                    lag_s = observations.lag_s(session, self.settings.compute_driver)
            except errors.OccError as exc:
                observability.log(
                    "worker.error",
                    level=logging.WARNING,
                    code="HEALTH_UNAVAILABLE",
                    error=exc.code,
                )
                continue
            fields: dict[str, Any] = {"pid": os.getpid(), "count": pending}
            if lag_s is not None:
                fields["lagS"] = round(lag_s, 3)
            observability.log("worker.health", **fields)


# Kept beside the app, never in ``app.conf``: Celery serialises its configuration for
# ``celery inspect conf`` and Flower, and ``Settings`` holds credentials.
_SETTINGS: weakref.WeakKeyDictionary[Celery, Settings] = weakref.WeakKeyDictionary()
_PROCESSES: weakref.WeakKeyDictionary[Celery, WorkerProcess] = weakref.WeakKeyDictionary()


def keep_settings(app: Celery, settings: Settings) -> None:
    """Remember ``settings`` for ``app``'s tasks and life cycle (outside its configuration)."""
    _SETTINGS[app] = settings


def attach(app: Celery) -> WorkerProcess:
    """A new ``WorkerProcess`` for ``app`` (whose settings ``keep_settings`` recorded)."""
    process = WorkerProcess(app)
    _PROCESSES[app] = process
    return process


def of(app: Celery) -> WorkerProcess:
    """The ``WorkerProcess`` attached to ``app``."""
    return _PROCESSES[app]
