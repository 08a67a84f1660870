"""Client commands for Agents and their deployments.

``agents create`` leaves runtime access for the Agent's service principal
(``grantRuntimeAccess``) to the API's default (granted when the caller may grant it) unless
told, and ``--deploy`` deploys it at once. ``--wait`` follows a deploy through its deployment
status, a stop through the Agent (and its stop work item when the caller may read the work
queue), a delete until the Agent is gone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import click

from occ.client import agent_progress as progress
from occ.client import http, namespaced, resources, states, waiting
from occ.client import session as shared
from occ.foundation import harnesses

AGENT_COLUMNS: Final = (
    "id",
    "name",
    "status",
    "desiredRuntimeState",
    "activeRevisionId",
    "endpoint",
)
AGENT: Final = shared.View(
    "agent",
    AGENT_COLUMNS,
    (
        "runtimeStatus",
        "harness.id",
        "harness.version",
        "executionMode",
        "computeDriver",
        "configurationId",
        "harnessAuth.secretId",
        "createdAt",
    ),
)


@click.group(cls=shared.ClientGroup)
def agents() -> None:
    """Create, read, deploy, stop and delete Agents."""


@dataclass(frozen=True)
class _Following:
    """What ``--wait``, ``--timeout`` and ``--output`` ask of a command on one Agent."""

    wait: bool
    timeout: float
    form: str

    def show_or_wait(
        self, accepted: Any, observe: Callable[[], waiting.Observation], label: str
    ) -> None:
        """Print the accepted answer, or (``--wait``) follow what ``label`` names until it
        settles."""
        shared.show_or_wait(
            accepted,
            observe,
            wait=self.wait,
            label=label,
            timeout_s=self.timeout,
            form=self.form,
        )


def _agent_command(
    group: click.Group, name: str, *arguments: shared.Decorator
) -> Callable[[Callable[..., None]], click.Command]:
    """``group``'s command ``name``: AGENT, ``arguments``, ``-n NAMESPACE``, ``--wait`` and
    ``--output``. The command is handed the ids of the Namespace and the Agent (each named by
    id or name), what to print or wait for, and its ``arguments``."""

    def declare(command: Callable[..., None]) -> click.Command:
        @functools.wraps(command)
        def resolved(
            session: shared.Session,
            *,
            agent: str,
            namespace: str | None,
            wait: bool,
            timeout: float,
            form: str,
            **given: Any,
        ) -> None:
            namespace_id, agent_id = _agent(session, namespace, agent)
            command(session, namespace_id, agent_id, _Following(wait, timeout, form), **given)

        options: tuple[shared.Decorator, ...] = (
            shared.output_option,
            shared.wait_options,
            shared.namespace_option,
            *reversed(arguments),
            click.argument("agent"),
        )
        declared: Callable[..., Any] = shared.pass_session(resolved)
        for option in options:
            declared = option(declared)
        return group.command(name)(declared)

    return declare


@agents.command("create")
@click.argument("name")
@shared.namespace_option
@click.option("--configuration", required=True, help="Its Configuration (id or name).")
@click.option("--secret", required=True, help="Its harness Secret (id or name).")
@click.option(
    "--harness",
    type=click.Choice([str(harness) for harness in harnesses.Harness]),
    default=harnesses.Harness.OPENCLAW.value,
    show_default=True,
)
@click.option("--harness-version", default="1.0.0", show_default=True)
@click.option(
    "--grant-runtime-access/--no-grant-runtime-access",
    default=None,
    help="Let its service principal read the Configuration and use the Secret "
    "(default: when you hold installation:administer).",
)
@click.option("--deploy", is_flag=True, help="Deploy it right away.")
@shared.wait_options
@shared.output_option
@shared.pass_session
def create_agent(
    session: shared.Session,
    *,
    name: str,
    namespace: str | None,
    configuration: str,
    secret: str,
    harness: str,
    harness_version: str,
    grant_runtime_access: bool | None,
    deploy: bool,
    wait: bool,
    timeout: float,
    form: str,
) -> None:
    """Create a draft Agent (and with --deploy, deploy it; --wait follows the deploy)."""
    if wait and not deploy:
        raise click.UsageError("--wait follows the deploy: give --deploy too")
    namespace_id = shared.namespace_id(session, namespace)
    body: dict[str, Any] = {
        "name": name,
        "configurationId": shared.member_id(session, namespace_id, "configurations", configuration),
        "harness": {"id": harness, "version": harness_version},
        "executionMode": str(harnesses.MODES[harness]),
        "harnessAuth": {
            "kind": "secret",
            "secretId": shared.member_id(session, namespace_id, "secrets", secret),
        },
    }
    if grant_runtime_access is not None:  # else the API's default, the same
        body["grantRuntimeAccess"] = grant_runtime_access
    agent = session.client.post(shared.path("namespaces", namespace_id, "agents"), body).data
    if not deploy:
        shared.show(agent, form, AGENT)
        shared.hint(f"occ agents deploy {name} -n {namespace_id} --wait")
        return
    _deploy(session, namespace_id, agent["id"], _Following(wait, timeout, form))


namespaced.list_command(agents, "agents", AGENT, "The Namespace's Agents you may read.")


namespaced.get_command(agents, "agents", AGENT, "One Agent (id or name).")


@_agent_command(
    agents,
    "update",
    click.option("--configuration", default=None, help="Its new Configuration (id or name)."),
    click.option("--secret", default=None, help="Its new harness Secret (id or name)."),
    click.option(
        "--harness",
        type=click.Choice([str(harness) for harness in harnesses.Harness]),
        default=None,
        help="Its new harness (its execution mode follows).",
    ),
    click.option("--harness-version", default=None, help="Its new harness version."),
    click.option("--name", "new_name", default=None, help="A new name."),
    click.option(
        "--grant-runtime-access/--no-grant-runtime-access",
        default=None,
        help="Let its service principal read a new Configuration and use a new Secret "
        "(default: when you hold installation:administer).",
    ),
    click.option("--deploy", is_flag=True, help="Deploy the edited draft right away."),
)
def update_agent(
    session: shared.Session,
    namespace_id: str,
    agent_id: str,
    follow: _Following,
    *,
    configuration: str | None,
    secret: str | None,
    harness: str | None,
    harness_version: str | None,
    new_name: str | None,
    grant_runtime_access: bool | None,
    deploy: bool,
) -> None:
    """Edit the draft (--deploy: then deploy it; --wait follows the deploy).

    A new Configuration or Secret is granted to the Agent's service principal as create does
    (the API's default: when you may grant it; --no-grant-runtime-access: never).
    """
    if follow.wait and not deploy:
        raise click.UsageError("--wait follows the deploy: give --deploy too")
    agent_path = shared.path("namespaces", namespace_id, "agents", agent_id)
    body: dict[str, Any] = {}
    if new_name is not None:
        body["name"] = new_name
    if configuration is not None:
        body["configurationId"] = shared.member_id(
            session, namespace_id, "configurations", configuration
        )
    if secret is not None:
        secret_id = shared.member_id(session, namespace_id, "secrets", secret)
        body["harnessAuth"] = {"kind": "secret", "secretId": secret_id}
    if harness is not None or harness_version is not None:
        current = session.get(agent_path)["harness"]
        chosen = harness or current["id"]
        body["harness"] = {"id": chosen, "version": harness_version or current["version"]}
        body["executionMode"] = str(harnesses.MODES[chosen])
    if not body:
        raise click.UsageError(
            "give what changes: --configuration, --secret, --harness, --harness-version or --name"
        )
    if grant_runtime_access is not None:  # else the API's default, the same as create's
        body["grantRuntimeAccess"] = grant_runtime_access
    updated = session.client.patch(agent_path, body).data
    if not deploy:
        shared.show(updated, follow.form, AGENT)
        shared.hint(f"occ agents deploy {updated['name']} -n {namespace_id} --wait")
        return
    _deploy(session, namespace_id, agent_id, follow)


@_agent_command(agents, "grant-runtime-access")
def grant_runtime_access(
    session: shared.Session, namespace_id: str, agent_id: str, follow: _Following
) -> None:
    """Let the Agent's service principal read its Configuration and use its Secret (an
    administrator's; what create does unless --no-grant-runtime-access)."""
    if follow.wait:
        raise click.UsageError("a grant takes effect at once: --wait has nothing to follow")
    granted = session.client.post(
        shared.path("namespaces", namespace_id, "agents", agent_id, "runtime-access")
    ).data
    shared.show(granted, follow.form)
    shared.hint(f"occ agents deploy {agent_id} -n {namespace_id} --wait")


@_agent_command(agents, "deploy")
def deploy_agent(
    session: shared.Session, namespace_id: str, agent_id: str, follow: _Following
) -> None:
    """Deploy a new revision (--wait: until it is active, or failed)."""
    _deploy(session, namespace_id, agent_id, follow)


@_agent_command(agents, "stop")
def stop_agent(
    session: shared.Session, namespace_id: str, agent_id: str, follow: _Following
) -> None:
    """Stop the Agent's runtime (--wait: until it is stopped)."""
    accepted = session.client.post(
        shared.path("namespaces", namespace_id, "agents", agent_id, "stop")
    )
    follow.show_or_wait(
        accepted.data,
        lambda: progress.stopped(session, namespace_id, agent_id),
        f"agent {agent_id}",
    )


@_agent_command(agents, "delete")
def delete_agent(
    session: shared.Session, namespace_id: str, agent_id: str, follow: _Following
) -> None:
    """Delete the Agent and its runtime (--wait: until it is gone)."""
    agent_path = shared.path("namespaces", namespace_id, "agents", agent_id)
    accepted = session.client.delete(agent_path)
    follow.show_or_wait(
        accepted.data,
        lambda: resources.deletion(session, agent_path, "agent", agent_id),
        f"agent {agent_id}",
    )


@click.group(cls=shared.ClientGroup)
def deployments() -> None:
    """Read an Agent's deployments."""


@_agent_command(deployments, "get", click.argument("deployment"))
def get_deployment(
    session: shared.Session, namespace_id: str, agent_id: str, follow: _Following, deployment: str
) -> None:
    """A deployment's status (--wait: until it is no longer pending)."""
    if not follow.wait:
        shared.show(progress.deployment(session, namespace_id, agent_id, deployment), follow.form)
        return
    shared.run_wait(
        lambda: progress.settled(progress.deployment(session, namespace_id, agent_id, deployment)),
        label=f"deployment {deployment}",
        timeout_s=follow.timeout,
        form=follow.form,
    )


# -- waiting ------------------------------------------------------------------------------------


def _agent(session: shared.Session, namespace: str | None, agent: str) -> tuple[str, str]:
    namespace_id = shared.namespace_id(session, namespace)
    return namespace_id, shared.member_id(session, namespace_id, "agents", agent)


def _deploy(session: shared.Session, namespace_id: str, agent_id: str, follow: _Following) -> None:
    try:
        accepted = session.client.post(
            shared.path("namespaces", namespace_id, "agents", agent_id, "deploy")
        ).data
    except http.ApiError as error:
        if error.status == 403 and "service principal" in error.detail:
            shared.fail(
                error.code,
                f"{error.message}; next: occ agents grant-runtime-access {agent_id} "
                f"-n {namespace_id} (an administrator), then deploy again",
            )
        raise
    deployment_id = accepted["deploymentId"]
    follow.show_or_wait(
        {
            "deploymentId": deployment_id,
            "agentId": agent_id,
            "state": states.DeploymentState.PENDING.value,
        },
        lambda: progress.settled(
            progress.deployment(session, namespace_id, agent_id, deployment_id)
        ),
        f"deployment {deployment_id}",
    )
