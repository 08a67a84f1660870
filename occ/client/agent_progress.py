"""What ``--wait`` observes of an Agent: a deployment settling and a stop finishing."""

from __future__ import annotations

from typing import Any, Final

from occ.client import http, states, waiting
from occ.client import session as shared

_STOP_DONE: Final = frozenset({"AGENT_STOPPED", "AGENT_ALREADY_STOPPED"})


def deployment(
    session: shared.Session, namespace_id: str, agent_id: str, deployment_id: str
) -> Any:
    """The deployment's status, read."""
    return session.get(
        shared.path("namespaces", namespace_id, "agents", agent_id, "deployments", deployment_id)
    )


def settled(deployment: Any) -> waiting.Observation:
    """A deployment: pending goes on, active is done, anything else ended otherwise."""
    state = deployment["state"]
    progress = (deployment.get("progress") or {}).get("code")
    if state == states.DeploymentState.PENDING:
        return waiting.Observation(state, progress=progress)
    if state == states.DeploymentState.ACTIVE:
        return waiting.Observation(state, ended=True, data=deployment)
    error = deployment.get("error") or {}
    return waiting.Observation(
        state,
        ended=True,
        failed=True,
        code=error.get("code") or deployment.get("reasonCode") or state.upper(),
        message=error.get("message") or f"the deployment is {state}",
        data=deployment,
    )


def stopped(session: shared.Session, namespace_id: str, agent_id: str) -> waiting.Observation:
    """The Agent's stop: its stop work item's state, or the Agent alone when the caller may
    not read the work queue."""
    agent = session.get(shared.path("namespaces", namespace_id, "agents", agent_id))
    work = latest_stop(session, namespace_id, agent_id)
    if work is None:  # the caller may not read the work queue: the Agent alone must tell
        if agent["desiredRuntimeState"] != states.DesiredRuntimeState.STOPPED:
            return waiting.Observation(
                "superseded", ended=True, failed=True, code="STOP_SUPERSEDED", data=agent
            )
        done = agent["activeRevisionId"] is None
        return waiting.Observation("stopped" if done else "stopping", ended=done, data=agent)
    if work["state"] in (states.WorkState.QUEUED, states.WorkState.CLAIMED):
        return waiting.Observation("stopping", progress=work.get("lastProgressCode"))
    code = work.get("reasonCode")
    if work["state"] == states.WorkState.SUCCEEDED and code in _STOP_DONE:
        return waiting.Observation("stopped", ended=True, data=agent)
    return waiting.Observation(
        "failed" if work["state"] == states.WorkState.FAILED_PERMANENT else "superseded",
        ended=True,
        failed=True,
        code=code or "FAILED",
        message=f"the stop of agent {agent_id} ended {code} (work {work['id']})",
        data=agent,
    )


def latest_stop(session: shared.Session, namespace_id: str, agent_id: str) -> Any:
    """The Agent's newest stop work item, or ``None`` when the caller may not read work."""
    try:
        items = session.get(
            shared.path("work"), {"namespaceId": namespace_id, "agentId": agent_id, "limit": 50}
        )
    except http.ApiError as error:
        if error.status in (403, 404):
            return None
        raise
    prefix = f"agent:{agent_id}:reconcile:stopped:"
    return next((item for item in items if str(item["id"]).startswith(prefix)), None)
