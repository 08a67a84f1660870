"""The states and statuses the API answers that the client's waits compare, as the API spells
them.

The client speaks HTTP only and never imports the core, so these repeat the values of the
core's own enums (a Namespace's status, a deployment's state, a work item's state, an Agent's
desired runtime state); a test keeps each equal to the core's.
"""

from __future__ import annotations

import enum


class NamespaceStatus(enum.StrEnum):
    """A Namespace's ``status``."""

    PROVISIONING = "provisioning"
    READY = "ready"
    FAILED = "failed"
    DELETING = "deleting"


class DeploymentState(enum.StrEnum):
    """A deployment's ``state``."""

    PENDING = "pending"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    STOPPED = "stopped"
    FAILED = "failed"


class WorkState(enum.StrEnum):
    """A work item's ``state``."""

    QUEUED = "queued"
    CLAIMED = "claimed"
    SUCCEEDED = "succeeded"
    FAILED_PERMANENT = "failed_permanent"


class DesiredRuntimeState(enum.StrEnum):
    """An Agent's ``desiredRuntimeState``."""

    RUNNING = "running"
    STOPPED = "stopped"
