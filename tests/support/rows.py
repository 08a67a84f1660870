"""Insert the rows a queue or IAM test stands on (as occ_app, through the ORM models)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import orm

from occ.foundation import ids
from occ.state import models, values, work_keys


def principal(
    session: orm.Session,
    *,
    name: str = "someone",
    kind: str = "human",
    namespace_id: str | None = None,
) -> str:
    principal_id = ids.new("principal")
    session.add(models.Principal(id=principal_id, name=name, kind=kind, namespace_id=namespace_id))
    session.flush()
    return principal_id


def namespace(
    session: orm.Session, *, created_by: str, name: str | None = None, status: str = "provisioning"
) -> str:
    namespace_id = ids.new("namespace")
    session.add(
        models.Namespace(
            id=namespace_id, name=name or namespace_id, status=status, created_by=created_by
        )
    )
    session.flush()
    return namespace_id


def agent(session: orm.Session, *, namespace_id: str, name: str = "agent") -> str:
    """An Agent with its configuration and service principal."""
    agent_id = ids.new("agent")
    configuration_id = ids.new("configuration")
    service_principal_id = ids.new("principal")
    session.add(
        models.Configuration(
            id=configuration_id, namespace_id=namespace_id, name=f"{name}-config", document={}
        )
    )
    session.flush()
    session.add(
        models.Principal(
            id=service_principal_id,
            name=f"{name}-principal",
            kind="service",
            namespace_id=namespace_id,
            agent_id=agent_id,
        )
    )
    session.add(
        models.Agent(
            id=agent_id,
            namespace_id=namespace_id,
            name=name,
            configuration_id=configuration_id,
            harness_id="openclaw",
            harness_version="1.0.0",
            execution_mode="embedded",
            compute_driver="local",
            service_principal_id=service_principal_id,
        )
    )
    session.flush()
    return agent_id


def namespace_work(
    namespace_id: str, actor_id: str, target: str = "ready"
) -> tuple[work_keys.WorkKey, values.WorkOwner]:
    key = (
        work_keys.namespace_ready(namespace_id)
        if target == "ready"
        else work_keys.namespace_deleted(namespace_id)
    )
    return key, values.WorkOwner(namespace_id=namespace_id, actor_id=actor_id)


def revision(
    session: orm.Session, *, namespace_id: str, agent_id: str, actor_id: str, number: int
) -> str:
    """An AgentRevision of ``agent_id``: a snapshot of the agent's configuration and harness."""
    agent_row = session.get(models.Agent, agent_id)
    assert agent_row is not None
    revision_id = ids.new("agent_revision")
    session.add(
        models.AgentRevision(
            id=revision_id,
            namespace_id=namespace_id,
            agent_id=agent_id,
            revision_number=number,
            actor_id=actor_id,
            configuration_id=agent_row.configuration_id,
            configuration_generation=1,
            configuration_document={},
            harness_id=agent_row.harness_id,
            harness_version=agent_row.harness_version,
            harness_mode=agent_row.execution_mode,
            compute_driver=agent_row.compute_driver,
            harness_auth={"kind": "secret", "secretId": ids.new("secret")},
            service_principal_id=agent_row.service_principal_id,
        )
    )
    session.flush()
    return revision_id


def revision_work(
    namespace_id: str, agent_id: str, revision_id: str, actor_id: str
) -> tuple[work_keys.WorkKey, values.WorkOwner]:
    return (
        work_keys.revision_reconcile(revision_id),
        values.WorkOwner(
            namespace_id=namespace_id, actor_id=actor_id, agent_id=agent_id, revision_id=revision_id
        ),
    )


def agent_delete_work(
    namespace_id: str, agent_id: str, actor_id: str
) -> tuple[work_keys.WorkKey, values.WorkOwner]:
    return (
        work_keys.agent_deleted(agent_id),
        values.WorkOwner(namespace_id=namespace_id, actor_id=actor_id, agent_id=agent_id),
    )


def configuration_and_secret(
    session: orm.Session,
    namespace_id: str,
    *,
    document: dict[str, Any],
    configuration_name: str = "config",
    secret_name: str = "token",
) -> tuple[str, str]:
    """A Configuration holding ``document`` and a Secret (a stand-in ciphertext); their ids."""
    configuration_id, secret_id = ids.new("configuration"), ids.new("secret")
    session.add(
        models.Configuration(
            id=configuration_id,
            namespace_id=namespace_id,
            name=configuration_name,
            document=document,
        )
    )
    session.add(
        models.Secret(
            id=secret_id, namespace_id=namespace_id, name=secret_name, value_ciphertext=b"x"
        )
    )
    return configuration_id, secret_id
