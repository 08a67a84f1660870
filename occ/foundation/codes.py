"""Reason codes: every code occ persists or logs, with its outcome class and public message.

``Code`` is the single catalogue; a code that is not a member is a bug. Messages are fixed text
shown to API clients; driver output never reaches them. Compute Driver codes (``driverCode``
in audit details and log fields) are the drivers' own and are not listed here.
"""

from __future__ import annotations

import enum
import re
from typing import Final


class Outcome(enum.StrEnum):
    """How a reconciliation pass with this code ends."""

    SUCCESS = "success"
    PENDING = "pending"
    RETRY = "retry"
    PERMANENT = "permanent"


S, P, R, X = Outcome.SUCCESS, Outcome.PENDING, Outcome.RETRY, Outcome.PERMANENT


class Code(enum.StrEnum):
    """A registered reason code: its value, outcome class and fixed public message."""

    outcome: Outcome
    message: str

    def __new__(cls, value: str, outcome: Outcome, message: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.outcome = outcome
        member.message = message
        return member

    # queue
    RECONCILE_SUCCEEDED = "RECONCILE_SUCCEEDED", S, "Reconciliation succeeded."
    CLAIM_RELEASED = (
        "CLAIM_RELEASED",
        P,
        "The worker shut down and returned the item to the queue.",
    )
    DISPATCH_EXPIRED = (
        "DISPATCH_EXPIRED",
        P,
        "The dispatched task never started; the item was requeued.",
    )
    LEASE_EXPIRED = "LEASE_EXPIRED", R, "The worker's lease expired before it finished."
    MAX_ATTEMPTS_EXHAUSTED = "MAX_ATTEMPTS_EXHAUSTED", X, "The item used up its attempts."
    CONVERGENCE_DEADLINE_EXCEEDED = (
        "CONVERGENCE_DEADLINE_EXCEEDED",
        X,
        "The resource did not converge before the deadline.",
    )
    UNKNOWN_FAILURE = "UNKNOWN_FAILURE", X, "Reconciliation failed."
    CLAIM_LOST = "CLAIM_LOST", R, "The worker lost its claim."
    WORK_VERSION_UNSUPPORTED = (
        "WORK_VERSION_UNSUPPORTED",
        P,
        "A worker of an older release could not read this item; it waits for a newer worker.",
    )
    SCHEMA_TOO_NEW = (
        "SCHEMA_TOO_NEW",
        X,
        "The database was migrated by a newer release than this process.",
    )
    CLAIM_RENEWAL_REFUSED = (
        "CLAIM_RENEWAL_REFUSED",
        R,
        "The database refused to renew the worker's lease; the worker stopped.",
    )
    CLAIM_RENEWAL_LATE = (
        "CLAIM_RENEWAL_LATE",
        R,
        "A lease renewal answered after the lease could have lapsed; the worker stopped.",
    )
    CLAIM_RENEWAL_FAILED = (
        "CLAIM_RENEWAL_FAILED",
        R,
        "A lease renewal failed; the worker stopped.",
    )
    CLAIM_LEASE_LAPSED = (
        "CLAIM_LEASE_LAPSED",
        R,
        "No renewal was confirmed within the lease; the worker stopped.",
    )
    WORKER_UNAVAILABLE = ("WORKER_UNAVAILABLE", R, "The worker could not reach its dependencies.")
    DEPENDENCY_UNAVAILABLE = (
        "DEPENDENCY_UNAVAILABLE",
        R,
        "A dependency was unavailable; the item will be retried.",
    )
    RECONCILER_ERROR = (
        "RECONCILER_ERROR",
        R,
        "The worker met an unexpected error; the item will be retried.",
    )
    # authorization and ownership
    ACTOR_REVOKED = (
        "ACTOR_REVOKED",
        X,
        "The principal that requested this no longer exists or was disabled.",
    )
    AUTHORIZATION_DENIED = (
        "AUTHORIZATION_DENIED",
        X,
        "The principal that requested this is no longer permitted to.",
    )
    INVALID_TARGET = "INVALID_TARGET", X, "The work item names an invalid target."
    INVALID_DRIVER_OBSERVATION = (
        "INVALID_DRIVER_OBSERVATION",
        X,
        "The compute driver reported an invalid observation.",
    )
    SUPERSEDED_TARGET = "SUPERSEDED_TARGET", S, "The resource moved on; nothing was left to do."
    # Namespaces
    NAMESPACE_READY = "NAMESPACE_READY", S, "The Namespace is ready."
    NAMESPACE_DELETED = "NAMESPACE_DELETED", S, "The Namespace was deleted."
    NAMESPACE_INCOMPLETE = "NAMESPACE_INCOMPLETE", P, "The Namespace is not ready yet."
    NAMESPACE_FAILED = (
        "NAMESPACE_FAILED",
        X,
        "The compute driver could not provision the Namespace.",
    )
    # Agents
    AGENT_STOPPED = "AGENT_STOPPED", S, "The Agent was stopped."
    AGENT_ALREADY_STOPPED = "AGENT_ALREADY_STOPPED", S, "The Agent was already stopped."
    STOP_SUPERSEDED = "STOP_SUPERSEDED", S, "A later deployment superseded the stop."
    AGENT_DELETED = "AGENT_DELETED", S, "The Agent was deleted."
    INVALID_AGENT_OWNER = ("INVALID_AGENT_OWNER", X, "The work item does not belong to this Agent.")
    INVALID_AGENT_STATE = (
        "INVALID_AGENT_STATE",
        X,
        "The Agent is not in a state this work expects.",
    )
    INVALID_AGENT_PRINCIPAL = (
        "INVALID_AGENT_PRINCIPAL",
        X,
        "The Agent's service principal is missing or invalid.",
    )
    INVALID_REVISION_OWNER = (
        "INVALID_REVISION_OWNER",
        X,
        "The revision does not belong to this Agent.",
    )
    COMPUTE_DRIVER_MISMATCH = (
        "COMPUTE_DRIVER_MISMATCH",
        X,
        "The revision is pinned to another compute driver.",
    )
    HARNESS_MISMATCH = (
        "HARNESS_MISMATCH",
        X,
        "The revision is pinned to a harness this worker does not run.",
    )
    HARNESS_CREDENTIAL_UNAVAILABLE = (
        "HARNESS_CREDENTIAL_UNAVAILABLE",
        X,
        "The revision's harness credential could not be read.",
    )
    CREDENTIAL_UNKNOWN = (
        "CREDENTIAL_UNKNOWN",
        X,
        "The account Backend does not know the revision's pinned credential.",
    )
    CREDENTIAL_WITHDRAWN = (
        "CREDENTIAL_WITHDRAWN",
        X,
        "The account Backend withdrew the revision's managed account.",
    )
    CREDENTIAL_ACCOUNT_MISMATCH = (
        "CREDENTIAL_ACCOUNT_MISMATCH",
        X,
        "The revision's pinned credential belongs to another account.",
    )
    CREDENTIAL_BACKEND_MISMATCH = (
        "CREDENTIAL_BACKEND_MISMATCH",
        X,
        "The revision's pinned credential lives under another Backend, driver or workspace.",
    )
    NAMESPACE_NOT_READY = "NAMESPACE_NOT_READY", R, "The Namespace is not ready."
    # revisions
    REVISION_ACTIVATED = "REVISION_ACTIVATED", S, "The revision is active."
    REVISION_ALREADY_ACTIVE = "REVISION_ALREADY_ACTIVE", S, "The revision was already active."
    REVISION_SUPERSEDED = ("REVISION_SUPERSEDED", S, "A newer revision superseded this deployment.")
    REVISION_STOPPED = (
        "REVISION_STOPPED",
        S,
        "The Agent was stopped before this revision became active.",
    )
    REVISION_MAINTENANCE_SUPERSEDED = (
        "REVISION_MAINTENANCE_SUPERSEDED",
        S,
        "The maintenance pass found nothing to maintain.",
    )
    REVISION_RETIRED = (
        "REVISION_RETIRED",
        S,
        "The runtime of a revision whose deployment failed for good was retired.",
    )
    REVISION_INCOMPLETE = "REVISION_INCOMPLETE", P, "The revision's runtime is not ready yet."
    REVISION_DEGRADED = (
        "REVISION_DEGRADED",
        S,
        "The revision's runtime was found unhealthy; the next observation repairs it again.",
    )
    REVISION_FINALIZATION_INCOMPLETE = (
        "REVISION_FINALIZATION_INCOMPLETE",
        P,
        "Activation has not finished yet.",
    )
    ACTIVE_REVISION_CHANGED = (
        "ACTIVE_REVISION_CHANGED",
        R,
        "Another revision became active meanwhile; retrying.",
    )
    RUNTIME_STARTUP_FAILED = "RUNTIME_STARTUP_FAILED", X, "The runtime failed to start."
    # Kubernetes Compute Driver failures a revision may end with
    ROLLOUT_PROGRESS_DEADLINE_EXCEEDED = (
        "ROLLOUT_PROGRESS_DEADLINE_EXCEEDED",
        X,
        "The gateway rollout exceeded its progress deadline.",
    )
    KUBERNETES_OBJECT_NOT_OWNED = (
        "KUBERNETES_OBJECT_NOT_OWNED",
        X,
        "A Kubernetes object with occ's name exists and is not occ's.",
    )
    KUBERNETES_FORBIDDEN = (
        "KUBERNETES_FORBIDDEN",
        X,
        "The Kubernetes API refused occ's credentials or permissions.",
    )
    KUBERNETES_REQUEST_INVALID = (
        "KUBERNETES_REQUEST_INVALID",
        X,
        "The Kubernetes API rejected an object occ sent.",
    )
    KUBERNETES_CREDENTIAL_MISSING = (
        "KUBERNETES_CREDENTIAL_MISSING",
        X,
        "The revision has no harness credential to deliver.",
    )
    # Docker Compute Driver failures a revision may end with
    DOCKER_OBJECT_NOT_OWNED = (
        "DOCKER_OBJECT_NOT_OWNED",
        X,
        "A Docker object with occ's name exists and is not occ's.",
    )
    DOCKER_GATEWAY_IMAGE_MISSING = (
        "DOCKER_GATEWAY_IMAGE_MISSING",
        X,
        "The Docker Engine does not have the gateway image.",
    )
    DOCKER_REQUEST_REJECTED = (
        "DOCKER_REQUEST_REJECTED",
        X,
        "The Docker Engine rejected a request occ sent.",
    )
    DOCKER_CREDENTIAL_UNDELIVERABLE = (
        "DOCKER_CREDENTIAL_UNDELIVERABLE",
        X,
        "The harness credential cannot be delivered to the container.",
    )
    # SSH Compute Driver failures a revision may end with
    SSH_HOST_REMOVED = (
        "SSH_HOST_REMOVED",
        X,
        "The Namespace's SSH host is no longer in the host pool.",
    )
    SSH_HOST_KEY_MISMATCH = (
        "SSH_HOST_KEY_MISMATCH",
        X,
        "The SSH host did not present its pinned host key.",
    )
    # lifecycle hook owners' refusals
    LAUNCH_ENVIRONMENT_INVALID = (
        "LAUNCH_ENVIRONMENT_INVALID",
        X,
        "A lifecycle hook contributed a launch environment entry the rules refuse.",
    )
    SANDBOX_POLICY_MISSING = (
        "SANDBOX_POLICY_MISSING",
        X,
        "The revision was not admitted under the selected sandbox's policy.",
    )


SUCCESS_WITH_RESULT: Final = frozenset({Code.REVISION_ACTIVATED, Code.REVISION_ALREADY_ACTIVE})
"""Terminal success codes whose work rows may carry ``{"warnings": [...]}``."""


_BY_VALUE: Final = {member.value: member for member in Code}
_SHAPE: Final = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def is_code_shaped(text: str) -> bool:
    """Whether ``text`` looks like a reason code (as drivers' own codes must, to be recorded)."""
    return _SHAPE.fullmatch(text) is not None


def lookup(code: str) -> Code | None:
    """The registered code spelled ``code``, or ``None``."""
    return _BY_VALUE.get(code)


def require(code: str, *allowed: Outcome) -> Code:
    """``code`` as a registered code with one of the ``allowed`` outcomes (any when none)."""
    entry = lookup(code)
    if entry is None:
        raise ValueError(f"unregistered reason code {code!r}")
    if allowed and entry.outcome not in allowed:
        raise ValueError(f"reason code {code} is {entry.outcome}, expected one of {allowed}")
    return entry


def message(code: str) -> str:
    """The fixed public message of a code (a generic one for an unknown code)."""
    entry = lookup(code)
    return entry.message if entry else Code.UNKNOWN_FAILURE.message
