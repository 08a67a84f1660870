"""Reason codes: every code occ persists or logs, with its outcome class and public message.

The registry is the single catalogue; a code that is not here is a bug. Messages are
fixed text shown to API clients; driver output never reaches them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class Outcome(enum.StrEnum):
    """How a reconciliation pass with this code ends."""

    SUCCESS = "success"
    PENDING = "pending"
    RETRY = "retry"
    PERMANENT = "permanent"


@dataclass(frozen=True)
class ReasonCode:
    """One registered code."""

    code: str
    outcome: Outcome
    message: str


def _table(*entries: tuple[str, Outcome, str]) -> dict[str, ReasonCode]:
    return {code: ReasonCode(code, outcome, message) for code, outcome, message in entries}


S, P, R, X = Outcome.SUCCESS, Outcome.PENDING, Outcome.RETRY, Outcome.PERMANENT

REGISTRY: Final = _table(
    # queue
    ("RECONCILE_SUCCEEDED", S, "Reconciliation succeeded."),
    ("CLAIM_RELEASED", P, "The worker shut down and returned the item to the queue."),
    ("DISPATCH_EXPIRED", P, "The dispatched task never started; the item was requeued."),
    ("LEASE_EXPIRED", R, "The worker's lease expired before it finished."),
    ("MAX_ATTEMPTS_EXHAUSTED", X, "The item used up its attempts."),
    ("CONVERGENCE_DEADLINE_EXCEEDED", X, "The resource did not converge before the deadline."),
    ("UNKNOWN_FAILURE", X, "Reconciliation failed."),
    ("CLAIM_LOST", R, "The worker lost its claim."),
    ("WORKER_UNAVAILABLE", R, "The worker could not reach its dependencies."),
    ("DEPENDENCY_UNAVAILABLE", R, "A dependency was unavailable; the item will be retried."),
    # authorization and ownership
    ("ACTOR_REVOKED", X, "The principal that requested this no longer exists or was disabled."),
    ("AUTHORIZATION_DENIED", X, "The principal that requested this is no longer permitted to."),
    ("INVALID_TARGET", X, "The work item names an invalid target."),
    ("INVALID_DRIVER_OBSERVATION", X, "The compute driver reported an invalid observation."),
    ("SUPERSEDED_TARGET", S, "The resource moved on; nothing was left to do."),
    # Namespaces
    ("NAMESPACE_READY", S, "The Namespace is ready."),
    ("NAMESPACE_DELETED", S, "The Namespace was deleted."),
    ("NAMESPACE_INCOMPLETE", P, "The Namespace is not ready yet."),
    ("NAMESPACE_FAILED", X, "The compute driver could not provision the Namespace."),
    # Agents
    ("AGENT_STOPPED", S, "The Agent was stopped."),
    ("AGENT_ALREADY_STOPPED", S, "The Agent was already stopped."),
    ("STOP_SUPERSEDED", S, "A later deployment superseded the stop."),
    ("AGENT_DELETED", S, "The Agent was deleted."),
    ("INVALID_AGENT_OWNER", X, "The work item does not belong to this Agent."),
    ("INVALID_AGENT_STATE", X, "The Agent is not in a state this work expects."),
    ("INVALID_AGENT_PRINCIPAL", X, "The Agent's service principal is missing or invalid."),
    ("INVALID_REVISION_OWNER", X, "The revision does not belong to this Agent."),
    ("COMPUTE_DRIVER_MISMATCH", X, "The revision is pinned to another compute driver."),
    ("HARNESS_MISMATCH", X, "The revision is pinned to a harness this worker does not run."),
    ("NAMESPACE_NOT_READY", R, "The Namespace is not ready."),
    # revisions
    ("REVISION_ACTIVATED", S, "The revision is active."),
    ("REVISION_ALREADY_ACTIVE", S, "The revision was already active."),
    ("REVISION_SUPERSEDED", S, "A newer revision superseded this deployment."),
    ("REVISION_STOPPED", S, "The Agent was stopped before this revision became active."),
    ("REVISION_MAINTENANCE_SUPERSEDED", S, "The maintenance pass found nothing to maintain."),
    ("REVISION_INCOMPLETE", P, "The revision's runtime is not ready yet."),
    ("REVISION_FINALIZATION_INCOMPLETE", P, "Activation has not finished yet."),
    ("ACTIVE_REVISION_CHANGED", R, "Another revision became active meanwhile; retrying."),
    ("RUNTIME_STARTUP_FAILED", X, "The runtime failed to start."),
)

SUCCESS_WITH_RESULT: Final = frozenset({"REVISION_ACTIVATED", "REVISION_ALREADY_ACTIVE"})
"""Terminal success codes whose work rows may carry ``{"warnings": [...]}``."""


def get(code: str) -> ReasonCode:
    """The registered code; ``KeyError`` for an unregistered one."""
    return REGISTRY[code]


def require(code: str, *allowed: Outcome) -> str:
    """``code`` if it is registered with one of the ``allowed`` outcomes."""
    entry = REGISTRY.get(code)
    if entry is None:
        raise ValueError(f"unregistered reason code {code!r}")
    if allowed and entry.outcome not in allowed:
        raise ValueError(f"reason code {code} is {entry.outcome}, expected one of {allowed}")
    return code


def message(code: str) -> str:
    """The fixed public message of a code (a generic one for an unknown code)."""
    entry = REGISTRY.get(code)
    return entry.message if entry else "Reconciliation failed."
