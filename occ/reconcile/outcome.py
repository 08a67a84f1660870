"""What one reconciliation pass ended with (for logs, metrics and the follow-up nudge)."""

from __future__ import annotations

from dataclasses import dataclass

from occ.foundation import codes
from occ.state import values


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


def requeued(outcome: codes.Outcome, code: str, item: values.WorkItem) -> PassResult:
    """A pass that put its item back: ``retry_in_ms`` is how soon it is due again, on the
    database clock (the transition stamped ``updated_at`` and ``available_at`` together)."""
    due_in = item.available_at - item.updated_at
    return PassResult(outcome, code, max(int(due_in.total_seconds() * 1000), 0))
