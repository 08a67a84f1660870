"""``/v1/namespaces/<namespace_id>/agents``: drafts, deploy, stop, delete, runtime access,
revisions and deployment status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import marshmallow as ma

from occ.controller import agent_lifecycle, agents, deployments, revision_reads, runtime_grants
from occ.foundation import harnesses
from occ.state import agents as agent_rows
from occ.web import calls, locations, pagination, preconditions
from occ.web.routes import blueprints
from occ.web.schemas import agents as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/agents",
    description="Agents, their revisions and deployments.",
)


def _action(
    name: str,
    *,
    requires: str | tuple[str, ...],
    accepted: type[ma.Schema] | None = None,
    item: type[ma.Schema] | None = None,
) -> Callable[[blueprints.View], blueprints.View]:
    """``POST /<agent_id>/<name>``: an action on one Agent, whose body is optional."""
    return blueprint.operation(
        "POST",
        f"/<agent_id>/{name}",
        body=schemas.AgentActionBody,
        body_required=False,
        accepted=accepted,
        item=item,
        requires=requires,
    )


@blueprint.operation(
    "POST", "", body=schemas.AgentCreate, created=schemas.Agent, requires="agent:create"
)
@locations.at("agents.get_agent", agent_id="id")
def create_agent(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Create a draft Agent (desired ``stopped``) and its service principal; nothing runs."""
    command = agents.CreateAgent(
        namespace_id=namespace_id,
        name=body["name"],
        configuration_id=body["configuration_id"],
        harness=_harness(body["harness"]),
        execution_mode=harnesses.ExecutionMode(body["execution_mode"]),
        harness_auth=_harness_auth(body["harness_auth"]),
        grant_runtime_access=body.get("grant_runtime_access"),
    )
    compute_driver = calls.context().runtime.settings.compute_driver
    return calls.item(
        agents.create_agent,
        command,
        compute_driver=compute_driver,
        quota_defaults=calls.quota_defaults(),
    )


@blueprint.operation("GET", "", page=schemas.Agent, named=True, requires="agent:read")
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
    mode = body.get("execution_mode")
    command = agents.UpdateAgent(
        namespace_id=namespace_id,
        agent_id=agent_id,
        name=body.get("name"),
        configuration_id=body.get("configuration_id"),
        harness=None if "harness" not in body else _harness(body["harness"]),
        execution_mode=None if mode is None else harnesses.ExecutionMode(mode),
        harness_auth=None if "harness_auth" not in body else _harness_auth(body["harness_auth"]),
        grant_runtime_access=body.get("grant_runtime_access"),
        if_match=preconditions.expected(),
    )
    return calls.item(agents.update_agent, command)


@blueprint.operation("DELETE", "/<agent_id>", accepted=schemas.Agent, requires="agent:delete")
@locations.at("agents.get_agent")
def delete_agent(namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Admit the deletion; repeat after a failure to retry (or take it over)."""
    command = agent_lifecycle.DeleteAgent(
        namespace_id=namespace_id, agent_id=agent_id, if_match=preconditions.expected()
    )
    return calls.admitted(agent_lifecycle.delete_agent, command)


@_action(
    "deploy",
    accepted=schemas.DeployAccepted,
    requires=("agent:deploy", "configuration:read", "secret:operate"),
)
@locations.at("agents.get_deployment", deployment_id="deployment_id")
def deploy_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Pin a new immutable revision and admit its deployment (the Namespace must be ready)."""
    command = deployments.Deploy(namespace_id=namespace_id, agent_id=agent_id)
    drivers = calls.context().drivers
    return calls.admitted(
        deployments.deploy_agent,
        command,
        sandbox=drivers.sandbox,
        configuration_store=drivers.configuration,
        accounts=drivers.accounts,
        quota_defaults=calls.quota_defaults(),
    )


@_action("stop", accepted=schemas.Agent, requires="agent:operate")
@locations.at("agents.get_agent")
def stop_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Admit a stop: desired ``stopped``; a worker stops the runtime."""
    command = agent_lifecycle.StopAgent(namespace_id=namespace_id, agent_id=agent_id)
    return calls.admitted(agent_lifecycle.stop_agent, command)


@_action("repair", accepted=schemas.Agent, requires="agent:deploy")
@locations.at("agents.get_agent")
def repair_agent(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Admit a repair of the running revision now; its repairs are counted afresh."""
    command = agent_lifecycle.RepairAgent(namespace_id=namespace_id, agent_id=agent_id)
    return calls.admitted(agent_lifecycle.repair_agent, command)


@_action(
    "runtime-access",
    item=schemas.RuntimeAccess,
    requires=("installation:administer", "agent:read"),
)
def grant_runtime_access(body: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """Bind the built-in agent-runtime Role to the Agent's service principal on its
    Configuration and harness Secret, as ``grantRuntimeAccess`` does at creation (idempotent).
    """
    command = runtime_grants.GrantRuntimeAccess(namespace_id=namespace_id, agent_id=agent_id)
    return calls.item(runtime_grants.grant_runtime_access, command)


@blueprint.operation(
    "GET", "/<agent_id>/revisions", page=schemas.AgentRevision, requires="agent_revision:read"
)
def list_revisions(query: dict[str, Any], namespace_id: str, agent_id: str) -> dict[str, Any]:
    """The Agent's revisions the caller may read, newest first."""
    window = pagination.window(query, pagination.NEWEST_REVISION_FIRST)
    revisions = calls.call(
        revision_reads.list_revisions, window, namespace_id=namespace_id, agent_id=agent_id
    )
    return pagination.page(revisions)


@blueprint.operation(
    "GET",
    "/<agent_id>/revisions/<revision_id>",
    item=schemas.AgentRevision,
    requires="agent_revision:read",
)
def get_revision(namespace_id: str, agent_id: str, revision_id: str) -> dict[str, Any]:
    return calls.item(
        revision_reads.get_revision,
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
        revision_reads.get_deployment,
        namespace_id=namespace_id,
        agent_id=agent_id,
        deployment_id=deployment_id,
    )


def _harness(value: dict[str, Any]) -> agent_rows.Harness:
    """The body's ``harness`` (``AgentHarnessInput``)."""
    return agent_rows.Harness(id=value["id"], version=value["version"])


def _harness_auth(value: dict[str, Any]) -> agent_rows.HarnessAuth:
    """The body's ``harnessAuth`` (``AgentHarnessAuthInput``)."""
    return agent_rows.HarnessAuth(
        kind=value["kind"], secret_id=value.get("secret_id"), account_id=value.get("account_id")
    )
