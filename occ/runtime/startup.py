"""Waiting at start-up until the database can serve: migrated to this code's schema, bootstrapped.

The API (in gunicorn's master), the workers and beat start beside the one-shot migration and
bootstrap (a Procfile's ``release``, compose's ``migrate``): each waits here, bounded, instead of
exiting on a database that is not ready yet (but at once, ``SCHEMA_TOO_NEW``, on a database a
newer release migrated: waiting would not help). It logs ``startup.waiting`` when it starts waiting
and every ``LOG_EVERY_S`` after, ``startup.ready`` once ready, and raises after the bound. Once
ready it measures the process's clock skew against the database (``clock.skew`` when large).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

from occ.foundation import errors
from occ.state import installation, schema, schema_version, work_queue
from occ.state.db import Database
from occ.telemetry import clock_skew, observability

EXIT_NOT_READY: Final = 3
"""Exit status of a process whose start-up checks failed (settings, wait, preflight)."""

POLL_S: Final = 0.5
"""Pause between two looks at the database."""

LOG_EVERY_S: Final = 10.0
"""Period of ``startup.waiting`` while the wait lasts."""

NOT_MIGRATED: Final = "the schema is not migrated to this release: run `occ db upgrade`"
NOT_BOOTSTRAPPED: Final = "the installation is not bootstrapped: run `occ bootstrap`"
UNAVAILABLE: Final = "the database is unavailable"


def missing(database: Database) -> str | None:
    """What ``database`` still lacks before occ can serve, in words; ``None`` when ready.

    Raises:
        SchemaTooNew: a newer release migrated the database (waiting would not help).
    """
    try:
        with database.snapshot() as session:
            applied = schema_version.applied(session)
            newer = schema.is_newer(applied)
            if not newer and not schema.is_current(applied):
                return NOT_MIGRATED
            if not newer and installation.current(session) is None:
                return NOT_BOOTSTRAPPED
    except errors.DependencyUnavailable:
        return UNAVAILABLE
    if newer and applied is not None:
        raise errors.SchemaTooNew(applied)
    return None


def wait_until_ready(
    database: Database,
    *,
    timeout_s: float,
    poll_s: float = POLL_S,
    log_every_s: float = LOG_EVERY_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once ``database`` is migrated and bootstrapped (at once, silently, when it is).

    Raises:
        DependencyUnavailable: still not ready after ``timeout_s``; the detail says what lacks.
        SchemaTooNew: a newer release migrated the database: at once, without waiting.
    """
    started = clock()
    reason = missing(database)
    if reason is None:
        measure_clock_skew(database)
        return
    logged_at: float | None = None
    while reason is not None:
        now = clock()
        waited_ms = round((now - started) * 1000)
        if now - started >= timeout_s:
            raise errors.DependencyUnavailable(f"{reason} (waited {timeout_s:g} s)")
        if logged_at is None or now - logged_at >= log_every_s:
            observability.log(
                "startup.waiting", level=logging.WARNING, reason=reason, durationMs=waited_ms
            )
            logged_at = now
        sleep(min(poll_s, max(timeout_s - (now - started), 0.0)))
        reason = missing(database)
    observability.log("startup.ready", durationMs=round((clock() - started) * 1000))
    measure_clock_skew(database)


def measure_clock_skew(database: Database) -> float | None:
    """Read the database clock once and record this process's skew (``clock.skew`` when it is
    past the threshold); ``None`` when the database does not answer."""
    try:
        with database.snapshot() as session:
            sent = time.monotonic()
            now = work_queue.database_now(session)
            round_trip_s = time.monotonic() - sent
    except errors.DependencyUnavailable:
        return None
    return clock_skew.PROCESS.record(now, round_trip_s)
