"""gunicorn's server hooks for occ's API, run in the master (the arbiter).

Load them with ``gunicorn --config python:occ.web.gunicorn_hooks`` (``CONFIG_OPTION``).
``on_starting`` runs once, before the master binds the port or forks a worker: it waits
(``occ.runtime.startup``, bounded by ``OCC_STARTUP_WAIT_MS``) until the database is migrated and
bootstrapped, so no worker boots into a database that cannot serve, and gunicorn's worker
timeout, which also kills a worker still loading the app, never cuts the wait short. After the
bound it logs ``api.startup-error`` and the master exits with ``EXIT_NOT_READY``.

The master also owns the API's metrics directory (``occ.telemetry.metrics_directory``: claimed, and
emptied of a previous run's files, when this module's imports load ``occ.telemetry.metrics``, before
any worker is forked): ``on_starting`` refuses a directory another running program holds the same
way, and ``child_exit`` forgets the live gauges of every worker that exits.
"""

from __future__ import annotations

from typing import Any, Final

from occ.foundation import errors
from occ.runtime import composition, startup
from occ.settings.config import Settings
from occ.tasks import lifecycle
from occ.telemetry import metrics_directory, observability

CONFIG_OPTION: Final = "python:occ.web.gunicorn_hooks"
"""The value of gunicorn's ``--config`` that installs these hooks."""


def on_starting(server: Any) -> None:
    """In the master, before any worker: own the metrics directory, wait for the database."""
    require_metrics_directory()
    wait_for_database()


def child_exit(server: Any, worker: Any) -> None:
    """In the master, after a worker exited (however it ended): drop its live gauges."""
    metrics_directory.mark_dead(worker.pid)


def require_metrics_directory() -> None:
    """Stop (``api.startup-error``, ``EXIT_NOT_READY``) when another program holds it."""
    try:
        metrics_directory.require_claimed()
    except errors.OccError as exc:
        observability.configure("occ-api")
        lifecycle.fail_startup(exc, "api.startup-error")


def wait_for_database() -> None:
    """Wait for a migrated, bootstrapped database; on failure log and exit ``EXIT_NOT_READY``."""
    observability.configure("occ-api")
    try:
        settings = Settings.from_env()
        observability.configure("occ-api", settings.log_level)
        built = composition.build(settings, pool_size=1, application_name="occ-api")
        try:
            startup.wait_until_ready(built.database, timeout_s=settings.startup_wait_ms / 1000)
        finally:
            built.database.dispose()
    except errors.OccError as exc:
        lifecycle.fail_startup(exc, "api.startup-error")
