"""How occ's Celery processes log: occ's JSON lines for every record, quiet periodic ticks.

``install(app, settings)`` runs once in every ``celery -A occ.tasks.app`` process (worker, beat,
Flower). The root logger writes occ's JSON lines (``occ.telemetry.observability``) at
``Settings.log_level``; Celery's own logging set-up is replaced through its ``setup_logging``
signal, so Celery's ``-l`` is not used and nothing adds a text handler. The worker's and beat's
banners (multi-line text) are not printed, and the lines Celery writes straight to the
terminal (``worker: Warm shutdown (MainProcess)``) become JSON lines. Celery's per-task lines
of the periodic tasks (``Task occ.claim[…] received``, ``… succeeded``, ``Discarding revoked
task`` for a tick that expired in the queue, beat's ``Sending due task``) are DEBUG: an idle
installation is quiet at INFO. So are ``occ.run_work``'s: each pass logs occ's own
``worker.completed`` (or ``worker.error``) event, and two more JSON lines per item would cost
the driver worker CPU for nothing new.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from typing import Any, Final

import click
from celery import Celery, signals
from celery.apps import beat as celery_beat
from celery.apps import worker as celery_worker

from occ.settings.config import Settings
from occ.tasks import names
from occ.telemetry import observability

PERIODIC_TASKS: Final = frozenset(
    {names.CLAIM, names.RECOVER_STALE, names.OBSERVE_RUNTIMES, names.PRUNE}
)
"""Tasks beat sends every few seconds: Celery's lines about them are DEBUG."""

QUIET_TASKS: Final = PERIODIC_TASKS | {names.RUN_WORK}
"""Tasks whose Celery lines are DEBUG: the periodic ones, and ``occ.run_work`` (a pass logs
its own event)."""

TASK_LOGGERS: Final = (
    "celery.app.trace",
    "celery.worker.strategy",
    "celery.worker.request",
    "celery.beat",
)
"""Celery's loggers of a task's received, succeeded, expired (discarded) and sent lines."""

SERVICES: Final = {"worker": "occ-worker", "beat": "occ-beat", "flower": "occ-flower"}
"""The ``service`` of a line by Celery subcommand (any other: ``occ-celery``)."""


class TaskLinesAtDebug(logging.Filter):
    """Lowers Celery's INFO lines about a task of ``QUIET_TASKS`` to DEBUG (handlers then drop
    them below their level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and _names_quiet_task(record.args):
            record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


def _names_quiet_task(args: Any) -> bool:
    if isinstance(args, Mapping):  # the trace's and the strategy's lines: {"name": task, ...}
        return args.get("name") in QUIET_TASKS
    if isinstance(args, tuple):  # beat's (entry, task), a request's (task, id)
        return any(isinstance(arg, str) and arg in QUIET_TASKS for arg in args)
    return False


def service_name() -> str:
    """The service of this Celery process, from the subcommand being run."""
    context = click.get_current_context(silent=True)
    while context is not None and context.invoked_subcommand is None:
        context = context.parent
    subcommand = context.invoked_subcommand if context is not None else None
    return SERVICES.get(subcommand or "", "occ-celery")


def install(app: Celery, settings: Settings) -> None:
    """Make this Celery process log occ's JSON lines at ``settings.log_level``."""
    service = service_name()
    observability.configure(service, settings.log_level)
    observability.capture_uncaught()
    quiet = TaskLinesAtDebug()
    for name in TASK_LOGGERS:
        logging.getLogger(name).addFilter(quiet)

    def on_setup_logging(**_: Any) -> None:
        # a receiver means Celery configures no handler of its own (and ignores ``-l``)
        observability.configure(service, settings.log_level)

    def on_worker_init(instance: Any = None, **_: Any) -> None:
        if instance is not None and getattr(instance, "app", app) is app:
            instance.quiet = True  # no banner: many lines of text

    signals.setup_logging.connect(on_setup_logging, weak=False)
    signals.celeryd_init.connect(on_worker_init, weak=False)
    app.Beat = app.subclass_with_self(QuietBeat)
    celery_worker.safe_say = say  # shutdown notices: JSON lines too


class QuietBeat(celery_beat.Beat):  # type: ignore[misc]  # celery ships no type hints
    """``celery beat`` without its start-up banner (many lines of text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["quiet"] = True
        super().__init__(*args, **kwargs)


def say(message: str, f: Any = None) -> None:
    """Celery's ``safe_say`` (shutdown notices, run in signal handlers) as one JSON line on
    stderr, written with ``os.write`` as Celery does (no lock is taken)."""
    if not logging.getLogger().isEnabledFor(logging.INFO):
        return
    record = logging.makeLogRecord(
        {
            "name": "celery.apps.worker",
            "msg": message.strip(),
            "levelno": logging.INFO,
            "levelname": logging.getLevelName(logging.INFO),
        }
    )
    with contextlib.suppress(OSError):
        os.write(2, (observability.render(record) + "\n").encode())
