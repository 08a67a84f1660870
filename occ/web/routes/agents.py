"""``/v1/namespaces/<namespace_id>/agents``: drafts, deploy, stop, delete, revisions and
deployment status."""

from __future__ import annotations

from typing import Any

from occ.controller import agent_lifecycle, agents, deployments
from occ.web import calls, locations, pagination, preconditions
from occ.web.routes import blueprints
from occ.web.schemas import agents as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/agents",
    description="Agents, their revisions and deployments.",
)


@blueprint.operation(
    "POST", "", body=schemas.AgentCreate, created=schemas.Agent, requires="agent:create"
)
@locations.at("agents.get_agent", agent_id="id")
def create_agent(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Create a draft Agent (desired ``stopped``) and its service principal; nothing runs."""
    return calls.item(
        agents.create_agent,
        namespace_id=namespace_id,
        name=body["name"],
        configuration_id=body["configuration_id"],
        harness=body["harness"],
        execution_mode=body["execution_mode"],
        harness_auth=body["harness_auth"],
        compute_driver=calls.context().runtime.settings.compute_driver,
        grant_runtime_access=body["grant_runtime_access"],
    )


@blueprint.operation("GET", "", page=schemas.Agent, requires="agent:read")
def list_agents(query: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """The Namespace's Agents the caller may read."""
    return calls.page(agents.list_agents, query, namespace_id=namespace_id)


@blueprint.operation("GET", "/<agent_id>", item=schemas.Agent, requires="agent:read")
def get_agent(namespace_id: str, agent_id: str) -> dict[str, Any]:
    return calls.item(agents.get_agent, namespace_id=namespace_id, agent_id=agent_id)


@blueprint.operation(
    "PATCH", "/<agent_id>", body=schemas.AgentUpdate, item=schemas.Agent, requires="agent:update"
)
def update_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Edit the draft; deployed revisions keep what they pinned."""
    return calls.item(
        agents.update_agent,
        namespace_id=namespace_id,
        agent_id=agent_id,
        changes=body,
        if_match=preconditions.expected(),
    )


@blueprint.operation("DELETE", "/<agent_id>", accepted=schemas.Agent, requires="agent:delete")
@locations.at("agents.get_agent")
def delete_agent(namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Admit the deletion; repeat after a failure to retry (or take it over)."""
    return calls.admitted(
        agent_lifecycle.delete_agent,
        namespace_id=namespace_id,
        agent_id=agent_id,
        if_match=preconditions.expected(),
    )


@blueprint.operation(
    "POST",
    "/<agent_id>/deploy",
    body=schemas.AgentActionBody,
    body_required=False,
    accepted=schemas.DeployAccepted,
    requires=("agent:deploy", "configuration:read", "secret:operate"),
)
@locations.at("agents.get_deployment", deployment_id="deployment_id")
def deploy_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Pin a new immutable revision and admit its deployment (the Namespace must be ready)."""
    return calls.admitted(
        deployments.deploy_agent,
        namespace_id=namespace_id,
        agent_id=agent_id,
        sandbox=calls.context().drivers.sandbox,
        configurations=calls.context().drivers.configuration,
    )


@blueprint.operation(
    "POST",
    "/<agent_id>/stop",
    body=schemas.AgentActionBody,
    body_required=False,
    accepted=schemas.Agent,
    requires="agent:operate",
)
@locations.at("agents.get_agent")
def stop_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Admit a stop: desired ``stopped``; a worker stops the runtime."""
    return calls.admitted(agent_lifecycle.stop_agent, namespace_id=namespace_id, agent_id=agent_id)


@blueprint.operation(
    "GET", "/<agent_id>/revisions", page=schemas.AgentRevision, requires="agent_revision:read"
)
def list_revisions(query: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """The Agent's revisions the caller may read, newest first."""
    return calls.page(
        deployments.list_revisions,
        query,
        order=pagination.NEWEST_REVISION_FIRST,
        namespace_id=namespace_id,
        agent_id=agent_id,
    )


@blueprint.operation(
    "GET",
    "/<agent_id>/revisions/<revision_id>",
    item=schemas.AgentRevision,
    requires="agent_revision:read",
)
def get_revision(namespace_id: str, agent_id: str, revision_id: str) -> dict[str, Any]:
    return calls.item(
        deployments.get_revision,
        namespace_id=namespace_id,
        agent_id=agent_id,
        revision_id=revision_id,
    )


@blueprint.operation(
    "GET",
    "/<agent_id>/deployments/<deployment_id>",
    item=schemas.Deployment,
    requires="agent_revision:read",
)
def get_deployment(namespace_id: str, agent_id: str, deployment_id: str) -> dict[str, Any]:
    """A deployment's status: pending, active, superseded, stopped or failed."""
    return calls.item(
        deployments.get_deployment,
        namespace_id=namespace_id,
        agent_id=agent_id,
        deployment_id=deployment_id,
    )
