"""Deployable Agents made through the use cases, for the tests and benchmarks that deploy.

A Namespace's resources (a Configuration, a harness Secret and a runtime Role allowed to read
the one and operate the other), Agents bound to that Role, and the deploy and the reads a test
waits on, as the World's administrator. How the Namespace becomes ready differs from suite to
suite (a row transition, or the workers), so it is the caller's; this module never waits on
workers and never touches a runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from occ.controller import (
    accounts,
    agent_lifecycle,
    agents,
    configurations,
    deployment_status,
    deployments,
    installation,
    revision_reads,
    secrets,
)
from occ.drivers.account import AccountBackend
from occ.drivers.secret import SecretDriver
from occ.foundation import harnesses
from occ.state import agents as agent_rows
from occ.state import iam_policy
from occ.state import restrictions as restriction_rows
from occ.state import roles as role_rows
from occ.state.db import Database

RUNTIME_PERMISSIONS = ("configuration:read", "secret:operate")
"""What an Agent's service principal needs to start: read its Configuration, use its Secret."""


@dataclass(frozen=True)
class Resources:
    """A Namespace's Configuration, harness Secret and runtime Role (their ids)."""

    configuration_id: str
    secret_id: str
    role_id: str


@dataclass(frozen=True)
class World:
    """One Agent in a ready Namespace, with what it runs on and the administrator who made it."""

    admin: str
    namespace_id: str
    configuration_id: str
    secret_id: str
    agent_id: str
    service_principal_id: str


def installation_admin(db: Database, name: str) -> str:
    """Bootstrap the Installation ``name``; the id of its first administrator, ``admin``."""
    boot = installation.bootstrap_installation(db, name=name, admin_name="admin")
    assert boot.admin_principal_id is not None
    return boot.admin_principal_id


def namespace_resources(
    db: Database,
    *,
    admin: str,
    namespace_id: str,
    store: SecretDriver,
    secret_value: str,
    document: dict[str, Any] | None = None,
) -> Resources:
    """Create the Configuration (``document``, a stand-in model by default), the Secret holding
    ``secret_value`` and the runtime Role in ``namespace_id``."""
    configuration = configurations.create_configuration(
        db,
        admin,
        configurations.CreateConfiguration(
            namespace_id=namespace_id,
            name="config",
            document={"model": "stand-in"} if document is None else document,
        ),
    )
    secret = secrets.create_secret(
        db,
        admin,
        secrets.CreateSecret(namespace_id=namespace_id, name="harness-key", value=secret_value),
        store=store,
    )
    with db.transaction() as session:
        role = role_rows.create_role(
            session,
            name="agent runtime",
            permissions=list(RUNTIME_PERMISSIONS),
            namespace_id=namespace_id,
        )
        role_id = role.id
    return Resources(configuration.id, secret.id, role_id)


def bound_agent(
    db: Database,
    *,
    admin: str,
    namespace_id: str,
    resources: Resources,
    compute_driver: str,
    name: str = "agent",
    harness: harnesses.Harness = harnesses.Harness.OPENCLAW,
) -> agent_rows.Agent:
    """An Agent of ``harness`` (in its one execution mode) on ``resources`` whose service
    principal holds the Role."""
    agent = agents.create_agent(
        db,
        admin,
        agents.CreateAgent(
            namespace_id=namespace_id,
            name=name,
            configuration_id=resources.configuration_id,
            harness=agent_rows.Harness(str(harness), "1.0.0"),
            execution_mode=harnesses.MODES[harness],
            harness_auth=agent_rows.HarnessAuth("secret", resources.secret_id),
        ),
        compute_driver=compute_driver,
    )
    with db.transaction() as session:
        iam_policy.bind(
            session,
            role_id=resources.role_id,
            principal_id=agent.service_principal_id,
            created_by=admin,
            namespace_id=namespace_id,
        )
    return agent


def make(
    db: Database,
    *,
    admin: str,
    namespace_id: str,
    compute_driver: str,
    store: SecretDriver,
    secret_value: str,
    agent_names: Sequence[str] = ("agent",),
    document: dict[str, Any] | None = None,
    harness: harnesses.Harness = harnesses.Harness.OPENCLAW,
) -> list[World]:
    """The resources of ``namespace_id`` (which must be ready) and one Agent on them per name
    (one, ``agent``, by default), a World each, in the order of ``agent_names``."""
    resources = namespace_resources(
        db,
        admin=admin,
        namespace_id=namespace_id,
        store=store,
        secret_value=secret_value,
        document=document,
    )
    made = []
    for name in agent_names:
        agent = bound_agent(
            db,
            admin=admin,
            namespace_id=namespace_id,
            resources=resources,
            compute_driver=compute_driver,
            name=name,
            harness=harness,
        )
        made.append(
            World(
                admin=admin,
                namespace_id=namespace_id,
                configuration_id=resources.configuration_id,
                secret_id=resources.secret_id,
                agent_id=agent.id,
                service_principal_id=agent.service_principal_id,
            )
        )
    return made


def deploy(db: Database, world: World, *, accounts: AccountBackend | None = None) -> str:
    """Deploy the World's Agent (its managed account, if any, checked at ``accounts``); the new
    deployment's (revision's) id."""
    accepted = deployments.deploy_agent(
        db,
        world.admin,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent_id),
        accounts=accounts,
    )
    return accepted.deployment_id


def use_managed_account(db: Database, world: World, backend: AccountBackend) -> str:
    """Have ``backend`` issue the account ``codex`` (workspace ``research``) in the World's
    Namespace and make it its Agent's harness authentication; the account's id."""
    account = accounts.issue_account(
        db,
        world.admin,
        accounts.IssueAccount(namespace_id=world.namespace_id, name="codex", workspace="research"),
        backend=backend,
    )
    agents.update_agent(
        db,
        world.admin,
        agents.UpdateAgent(
            namespace_id=world.namespace_id,
            agent_id=world.agent_id,
            harness_auth=agent_rows.HarnessAuth(agent_rows.ACCOUNT_SOURCE, account_id=account.id),
        ),
    )
    return account.id


def stop(db: Database, world: World) -> None:
    """Ask for the World's Agent to be stopped (as its administrator)."""
    agent_lifecycle.stop_agent(
        db,
        world.admin,
        agent_lifecycle.StopAgent(namespace_id=world.namespace_id, agent_id=world.agent_id),
    )


def deployment(db: Database, world: World, revision_id: str) -> deployment_status.DeploymentView:
    return revision_reads.get_deployment(
        db,
        actor_id=world.admin,
        namespace_id=world.namespace_id,
        agent_id=world.agent_id,
        deployment_id=revision_id,
    )


def state_is(db: Database, world: World, revision_id: str, *states: str) -> bool:
    """Whether the deployment is in one of ``states``."""
    return deployment(db, world, revision_id).state in states


def agent(db: Database, world: World) -> agent_rows.Agent:
    return agents.get_agent(
        db, actor_id=world.admin, namespace_id=world.namespace_id, agent_id=world.agent_id
    )


def agent_gone(db: Database, world: World) -> bool:
    """Whether the World's Agent row is gone (its deletion finalized)."""
    with db.transaction() as session:
        return agent_rows.get(session, world.namespace_id, world.agent_id) is None


def restrict_admin(db: Database, world: World, permission: str) -> None:
    """Take ``permission`` from the World's administrator in its Namespace (a restriction)."""
    with db.transaction() as session:
        restriction_rows.insert(
            session,
            permission=permission,
            created_by=world.admin,
            principal_id=world.admin,
            namespace_id=world.namespace_id,
        )
