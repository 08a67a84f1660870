"""What one reconciliation pass ended with (for logs, metrics and the follow-up nudge)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import orm

from occ import codes
from occ.state import work_queue


@dataclass(frozen=True)
class PassResult:
    """The outcome class and specific code of a pass; ``retry_in_ms`` for requeued items."""

    outcome: codes.Outcome
    code: str
    retry_in_ms: int | None = None


def success(code: str) -> PassResult:
    return PassResult(codes.Outcome.SUCCESS, code)


def permanent(code: str) -> PassResult:
    return PassResult(codes.Outcome.PERMANENT, code)


def requeued(
    session: orm.Session, outcome: codes.Outcome, code: str, available_at: dt.datetime | None
) -> PassResult:
    """A pass that put its item back: ``retry_in_ms`` is how soon it is due again, measured
    on the database clock (the follow-up nudge waits that long)."""
    if available_at is None:
        return PassResult(outcome, code)
    now = work_queue.database_now(session)
    return PassResult(outcome, code, max(int((available_at - now).total_seconds() * 1000), 0))
