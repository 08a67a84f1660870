"""What one reconciliation pass ended with (for logs, metrics and the follow-up nudge)."""

from __future__ import annotations

from dataclasses import dataclass

from occ import codes


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
