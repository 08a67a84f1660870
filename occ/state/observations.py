"""The fleet observer's schedule: which running Agents are due, and the cursor that says so.

Every running Agent is observed once per interval, at its phase: ``agents.observe_phase`` (a
stable hash of its id, ``0 .. PHASES - 1``) says after which share of the interval it is due.
``phase_ranges`` turns a window of time into the phases it covers (pure); ``take_due`` locks a
driver's cursor (another observer holding it is skipped, not waited for), reads the Agents due
since, at most ``limit`` of them, and moves the cursor to the end of what it read. So several
observers share a fleet without observing an Agent twice, and an idle fleet writes one row per
tick. A cursor more than an interval behind (an overloaded or stopped observer) jumps to one
interval behind: the work stays bounded, the lag shows (``lag_s``). Never commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import orm

from occ.state import deploys, queries, revisions, runtime_observations

SQL: Final = queries.load("observations.sql")
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


def moment_of(phase: int, after_us: int, interval_us: int) -> int:
    """The first moment at or after ``after_us`` whose phase is ``phase`` or the one before it
    (rounded down, so a window that starts there covers ``phase``)."""
    base = after_us - after_us % interval_us + phase * interval_us // PHASES
    return base if base >= after_us else base + interval_us


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
class Batch:
    """What one tick took: the due Agents, the window they were due in, and the lag."""

    due: list[Due]
    window_start: dt.datetime
    window_end: dt.datetime
    now: dt.datetime
    lag_s: float
    """How far behind ``now`` the cursor stood when the tick took it."""

    @property
    def caught_up(self) -> bool:
        """The window reached ``now`` (else more is due: take again soon)."""
        return self.window_end >= self.now


def take_due(
    session: orm.Session, compute_driver: str, *, interval_ms: int, limit: int
) -> Batch | None:
    """Lock the driver's cursor, read what fell due since (at most ``limit``), move the cursor
    past it; ``None`` when another observer holds the cursor."""
    params: dict[str, Any] = {"compute_driver": compute_driver, "interval_ms": interval_ms}
    session.execute(SQL["open_cursor"], params)
    cursor = session.execute(SQL["lock_cursor"], params).mappings().first()
    if cursor is None:
        return None
    now: dt.datetime = cursor["now"]
    observed_until: dt.datetime = cursor["observed_until"]
    lag_s = max((now - observed_until).total_seconds(), 0.0)
    interval_us = interval_ms * 1000
    start_us = max(_us(observed_until), _us(now) - interval_us)
    (low, high), (low2, high2) = phase_ranges(start_us, _us(now), interval_us)
    rows = (
        session.execute(
            SQL["due"],
            {
                **params,
                "deployment_kind": deploys.KIND,
                "low": low,
                "high": high,
                "low2": low2,
                "high2": high2,
                "limit": limit + 1,
            },
        )
        .mappings()
        .all()
    )
    end = now
    if len(rows) > limit:
        # stop before the first phase not taken, whole: its Agents wait for the next tick
        cut = rows[limit]["observe_phase"]
        taken = [row for row in rows[:limit] if row["observe_phase"] != cut]
        rows = taken or rows[:limit]
        end = min(_moment(moment_of(cut, start_us, interval_us)), now)
    session.execute(SQL["move_cursor"], {**params, "observed_until": end})
    return Batch([_due(row) for row in rows], _moment(start_us), end, now, lag_s)


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
