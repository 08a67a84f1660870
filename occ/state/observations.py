"""The fleet observer's schedule: which running Agents are due, and the cursor that says so.

Every running Agent is observed once per interval, at its phase: ``agents.observe_phase`` (a
stable hash of its id, ``0 .. PHASES - 1``) says after which share of the interval it is due.
``phase_ranges`` turns a window of time into the phases it covers (pure). ``claim_window`` locks
a driver's cursor (waiting up to ``CURSOR_WAIT_MS`` for another observer's short hold of it)
and moves it over a window sized to hold about ``limit`` Agents; ``due`` then reads the
Agents of that window without any lock, so several observers read and observe their windows
side by side, no Agent twice, and an idle fleet writes one row per tick. A cursor more than an
interval behind (an overloaded or stopped observer) jumps to one interval behind: the work
stays bounded, the lag shows (``lag_s``). Never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.state import db, deploys, queries, revisions, runtime_observations

SQL: Final = queries.load("observations.sql")
CURSOR_WAIT_MS: Final = 200
"""How long a tick waits for the cursor while another observer moves it (a hold lasts one short
transaction: a few milliseconds). Only a hold longer than this, a stuck transaction, skips the
tick; skipping at once would leave the second observer of a busy fleet idle most of the time."""
PHASES: Final = 1_000_000
"""The phases an interval is divided into (``agents.observe_phase`` lies in ``[0, PHASES)``)."""

PhaseRange = tuple[int, int]
"""Phases ``[low, high)``."""
_EMPTY: Final = (0, 0)


def phase_ranges(start_us: int, end_us: int, interval_us: int) -> tuple[PhaseRange, PhaseRange]:
    """The phases due in the window ``[start_us, end_us)`` (microseconds on one clock): one
    range, and a second one (empty: ``(0, 0)``) where the window wraps past the interval's end.
    Windows that follow each other cover every phase once per interval (a phase on a window's
    edge may be covered twice, never skipped); a window of an interval or more covers all."""
    if end_us <= start_us:
        return _EMPTY, _EMPTY
    if end_us - start_us >= interval_us:
        return (0, PHASES), _EMPTY
    low = phase_at(start_us, interval_us)
    high = phase_at(end_us, interval_us)
    if low < high:
        return (low, high), _EMPTY
    if low == high and end_us - start_us < interval_us // 2:
        return _EMPTY, _EMPTY  # shorter than one phase: nothing new is due
    return (low, PHASES), (0, high)


def phase_at(moment_us: int, interval_us: int) -> int:
    """The phase that falls due at ``moment_us``."""
    return (moment_us % interval_us) * PHASES // interval_us


@dataclass(frozen=True, kw_only=True)
class Due:
    """A running Agent due for observation, with what its observation is judged against."""

    revision: revisions.Revision
    """Its active revision."""
    phase: int
    endpoint: str | None
    """The endpoint the Agent published."""
    observed: runtime_observations.RuntimeStatus | None
    """What was last recorded of this revision's runtime (``None``: nothing, or of another)."""
    repairs: int
    """Consecutive repairs of the runtime so far."""
    repair_after: dt.datetime | None
    """When the next repair may be admitted (``None``: now)."""
    deploying: bool
    """A newer deploy of the Agent is under way (it will replace or stop this revision)."""


@dataclass(frozen=True)
class Window:
    """The stretch of time one tick observes, and how far behind the cursor stood."""

    start: dt.datetime
    end: dt.datetime
    now: dt.datetime
    interval_ms: int
    lag_s: float
    """How far behind ``now`` the cursor stood when the tick took it."""

    @property
    def caught_up(self) -> bool:
        """The window reached ``now`` (else more is due: take again soon)."""
        return self.end >= self.now


def claim_window(
    session: orm.Session, compute_driver: str, *, interval_ms: int, limit: int
) -> Window | None:
    """Lock the driver's cursor and move it over the window this tick observes: from where it
    stood (at most an interval ago) to now, or less, so that about ``limit`` of the running
    Agents fall due in it; ``None`` when another observer held the cursor for longer than
    ``CURSOR_WAIT_MS``."""
    params: dict[str, Any] = {"compute_driver": compute_driver, "interval_ms": interval_ms}
    # the rest of the tick's short transaction only touches the cursor row it then holds
    db.wait_for_locks_at_most(session, CURSOR_WAIT_MS)
    try:
        # a savepoint: a lock that does not come in time costs this tick, not the transaction
        with session.begin_nested():
            cursor = session.execute(SQL["lock_cursor"], params).mappings().first()
            if cursor is None:  # the first tick ever
                session.execute(SQL["open_cursor"], params)
                cursor = session.execute(SQL["lock_cursor"], params).mappings().one()
    except sa_exc.OperationalError as exc:
        if db.sqlstate(exc) == db.LOCK_NOT_AVAILABLE:
            return None
        raise
    now: dt.datetime = cursor["now"]
    observed_until: dt.datetime = cursor["observed_until"]
    interval_us = interval_ms * 1000
    start_us = max(_us(observed_until), _us(now) - interval_us)
    running = int(session.execute(SQL["running"], params).scalar_one())
    span_us = max(interval_us * limit // max(running, 1), 1)
    end = now if start_us + span_us >= _us(now) else _moment(start_us + span_us)
    session.execute(SQL["move_cursor"], {**params, "observed_until": end})
    lag_s = max((now - observed_until).total_seconds(), 0.0)
    return Window(_moment(start_us), end, now, interval_ms, lag_s)


def due(session: orm.Session, compute_driver: str, window: Window) -> list[Due]:
    """The running Agents whose phases fell due in ``window``."""
    interval_us = window.interval_ms * 1000
    (low, high), (low2, high2) = phase_ranges(_us(window.start), _us(window.end), interval_us)
    params = {
        "compute_driver": compute_driver,
        "deployment_kind": deploys.KIND,
        "low": low,
        "high": high,
        "low2": low2,
        "high2": high2,
    }
    return [_due(row) for row in session.execute(SQL["due"], params).mappings()]


def lag_s(session: orm.Session, compute_driver: str) -> float | None:
    """How far behind the database clock the driver's fleet was observed (``None``: never)."""
    found = session.execute(SQL["lag"], {"compute_driver": compute_driver}).scalar()
    return None if found is None else max(float(found), 0.0)


def _due(row: Any) -> Due:
    revision = revisions.record(row)
    status = row["observed_status"]
    observed = (
        runtime_observations.RuntimeStatus(status)
        if status is not None and row["observed_revision_id"] == revision.id
        else None
    )
    return Due(
        revision=revision,
        phase=row["observe_phase"],
        endpoint=row["endpoint"],
        observed=observed,
        repairs=row["observed_repairs"] or 0,
        repair_after=row["observed_repair_after"],
        deploying=row["deploying"],
    )


_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _us(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def _moment(us: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=us)
