"""A deployment's status, projected from its ``agent_revision:<rev>:reconcile`` work item.

``project`` is pure: the status is a function of the work item and the Agent's current active
revision, with fixed public messages from ``occ.foundation.codes`` (never driver text). The
deployment id is the revision id.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.foundation import codes
from occ.state import agents, values

ACTIVATED: Final = codes.SUCCESS_WITH_RESULT
"""Success codes of a revision that became (or already was) the active one."""


class DeploymentState(enum.StrEnum):
    """Where a deployment stands (projected from its work item and the Agent)."""

    PENDING = "pending"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True)
class DeploymentError:
    code: str
    message: str
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Progress:
    """Where a pending deployment stands: the worker's last progress code and the next try."""

    code: str | None
    at: dt.datetime | None
    next_attempt_at: dt.datetime | None


@dataclass(frozen=True, kw_only=True)
class DeploymentView:
    """A deployment's status: pending, active, superseded, stopped or failed.

    Not a stored entity: ``project`` computes it from the revision's work item and the Agent's
    current active revision, so it has a type of its own.
    """

    deployment_id: str
    revision_id: str
    namespace_id: str
    agent_id: str
    state: DeploymentState
    reason_code: str | None
    error: DeploymentError | None
    warnings: tuple[Mapping[str, Any], ...]
    progress: Progress | None


def project(work: values.WorkItem, agent: agents.Agent) -> DeploymentView:
    """The status of the deployment whose ``agent_revision:<rev>:reconcile`` item is ``work``.

    * queued or claimed: ``pending``, with progress (last progress code and time; the next
      attempt time while queued);
    * succeeded with ``REVISION_ACTIVATED`` / ``REVISION_ALREADY_ACTIVE``: ``active`` while it
      is the Agent's active revision; afterwards ``stopped`` if the Agent has no active
      revision and is desired stopped, else ``superseded``;
    * succeeded with ``REVISION_SUPERSEDED``: ``superseded``; with ``REVISION_STOPPED``:
      ``stopped``; with any other code: ``failed``;
    * failed_permanent: ``failed``.

    ``error`` is set only when failed: the code, its fixed public message and the row's
    ``result_data``. ``warnings`` come from the result of a succeeded row.
    """
    revision_id = work.owner.revision_id
    if revision_id is None or work.owner.agent_id != agent.id:
        raise ValueError(f"{work.id} is not a deployment of agent {agent.id}")
    state, error, warnings, progress = _status(work, agent, revision_id)
    return DeploymentView(
        deployment_id=revision_id,
        revision_id=revision_id,
        namespace_id=work.owner.namespace_id,
        agent_id=agent.id,
        state=state,
        reason_code=work.reason_code,
        error=error,
        warnings=warnings,
        progress=progress,
    )


def _status(
    work: values.WorkItem, agent: agents.Agent, revision_id: str
) -> tuple[DeploymentState, DeploymentError | None, tuple[Mapping[str, Any], ...], Progress | None]:
    if work.state in (values.WorkState.QUEUED, values.WorkState.CLAIMED):
        next_attempt = work.available_at if work.state == values.WorkState.QUEUED else None
        return (
            DeploymentState.PENDING,
            None,
            (),
            Progress(work.last_progress_code, work.last_progress_at, next_attempt),
        )
    code = work.reason_code or codes.Code.UNKNOWN_FAILURE
    if work.state == values.WorkState.FAILED_PERMANENT:
        return _failed(code, work)
    warnings = tuple((work.result_data or {}).get("warnings", ()))
    if code in ACTIVATED:
        if agent.active_revision_id == revision_id:
            state = DeploymentState.ACTIVE
        elif (
            agent.active_revision_id is None
            and agent.desired_runtime_state == agents.DesiredRuntimeState.STOPPED
        ):
            state = DeploymentState.STOPPED
        else:
            state = DeploymentState.SUPERSEDED
        return state, None, warnings, None
    if code == codes.Code.REVISION_SUPERSEDED:
        return DeploymentState.SUPERSEDED, None, warnings, None
    if code == codes.Code.REVISION_STOPPED:
        return DeploymentState.STOPPED, None, warnings, None
    return _failed(code, work)


def _failed(
    code: str, work: values.WorkItem
) -> tuple[DeploymentState, DeploymentError, tuple[Mapping[str, Any], ...], None]:
    return (
        DeploymentState.FAILED,
        DeploymentError(code, codes.message(code), work.result_data),
        (),
        None,
    )
