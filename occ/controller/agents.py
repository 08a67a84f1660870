"""Agent drafts: create, read, list and edit; the lookups other Agent use cases share.

Stop and delete are in ``occ.controller.agent_lifecycle``; deploy, revisions and deployment
status in ``occ.controller.deployments``; a draft's fields are checked by
``occ.controller.agent_drafts``. A change takes its command value (``CreateAgent``,
``UpdateAgent``). Every mutation locks the Namespace row (shared) and then the Agent row, and
writes the state change and its audit event in one transaction; a draft creates no work. They
return ``occ.controller.observed_agents.ObservedAgent`` values (the Agent with its runtime
status, read in the same transaction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ import iam
from occ.controller import (
    admission,
    agent_drafts,
    listing,
    observed_agents,
    preconditions,
    quotas,
    runtime_access,
)
from occ.controller import namespaces as namespace_cases
from occ.controller.changes import Change
from occ.foundation import errors, harnesses, ids
from occ.state import agents, iam_policy, keyset, namespaces
from occ.state import quotas as quota_rows
from occ.state.db import Database, Session

_RUNTIME_RESOURCES: Final = frozenset({"configuration_id", "harness_auth_secret_id"})
"""Draft columns naming what the runtime reads: a new one may be granted at once."""


@dataclass(frozen=True, kw_only=True)
class CreateAgent:
    """A new draft Agent of a Namespace: every field of its draft, and whether its service
    principal is granted runtime access at once (``None``: when the caller may grant it)."""

    namespace_id: str
    name: str
    configuration_id: str
    harness: agents.Harness
    execution_mode: harnesses.ExecutionMode
    harness_auth: agents.HarnessAuth
    grant_runtime_access: bool | None = False


@dataclass(frozen=True, kw_only=True)
class UpdateAgent:
    """The draft fields to change (``None`` leaves one as it is), if the Agent still has the
    version ``if_match`` admits."""

    namespace_id: str
    agent_id: str
    name: str | None = None
    configuration_id: str | None = None
    harness: agents.Harness | None = None
    execution_mode: harnesses.ExecutionMode | None = None
    harness_auth: agents.HarnessAuth | None = None
    grant_runtime_access: bool | None = False
    """For a new Configuration or Secret, as at creation (``None``: when the caller may)."""
    if_match: preconditions.Expected | None = None


def create_agent(
    db: Database,
    actor_id: str,
    command: CreateAgent,
    *,
    compute_driver: str,
    quota_defaults: quota_rows.Counts = quotas.UNSET,
) -> observed_agents.ObservedAgent:
    """Admit a draft Agent (desired ``stopped``) run by ``compute_driver``, and its
    Namespace-scoped service principal.

    Needs ``agent:create`` on the Namespace. No work: nothing runs until a deploy.
    ``grant_runtime_access`` also binds the built-in ``agent-runtime`` Role to the service
    principal on the Configuration and the Secret (``occ.controller.runtime_access``; needs
    ``installation:administer``), in the same transaction; left ``None`` it does so when the
    caller holds that permission and creates the Agent without a grant when not.

    Raises:
        NotFound: no such live Namespace, or the caller may not read it.
        InvalidInput: a bad field, or a configuration / secret not in this Namespace.
        Forbidden: the caller may read the Namespace but not create Agents, or may not grant
            runtime access (audited).
        NamespaceNotReady: the Namespace is being deleted.
        QuotaExceeded: the Namespace holds its quota of Agents (``occ.controller.quotas``).
        Conflict: the name is taken in the Namespace, or its ``agent-runtime`` Role differs.
    """
    admission.require_id("namespace", command.namespace_id)
    columns = agent_drafts.draft_columns(command)
    agent_drafts.check_execution_mode(columns, current=None)
    request = agent_drafts.describe(columns)
    with admission.guarded(db, actor_id) as session:
        namespace = lock_namespace(session, command.namespace_id)
        parent = iam.Resource.namespace(namespace.id)
        change = admission.permitted_verb(
            session, actor_id, "agent", "create", parent, request=request
        )
        if namespace.status == namespaces.NamespaceStatus.DELETING:
            raise errors.NamespaceNotReady("the Namespace is being deleted")
        agent_drafts.check_references(session, namespace.id, columns)
        quotas.enforce(session, namespace.id, "agents", quota_defaults)
        grant_decision = runtime_access.decide(
            session,
            actor_id,
            change.action,
            {**request, "grantRuntimeAccess": True},
            wanted=command.grant_runtime_access,
        )
        agent_id = ids.new("agent")
        principal = iam_policy.create_principal(
            session,
            name=f"agent {agent_id}",
            kind=iam_policy.PrincipalKind.SERVICE,
            namespace_id=namespace.id,
            agent_id=agent_id,
        )
        agent = agents.insert(
            session,
            agent_id=agent_id,
            namespace_id=namespace.id,
            compute_driver=compute_driver,
            service_principal_id=principal.id,
            **columns,
        )
        granted = (
            None
            if grant_decision is None
            else runtime_access.grant(
                session, actor_id=actor_id, agent=agent, decision=grant_decision
            )
        )
        change.audit(
            "agent",
            agent.id,
            namespace.id,
            {
                **request,
                "servicePrincipalId": principal.id,
                "computeDriver": compute_driver,
                "status": agent.status,
                "desiredRuntimeState": agent.desired_runtime_state,
                **({} if granted is None else {"runtimeAccess": granted}),
            },
        )
        return observed_agents.observe(session, agent)


def update_agent(
    db: Database, actor_id: str, command: UpdateAgent
) -> observed_agents.ObservedAgent:
    """Edit the draft (``agent:update``); deployed revisions keep what they pinned.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        InvalidInput: no field, a bad field, or a reference outside this Namespace.
        Forbidden: the caller may read but not update the Agent (audited).
        PreconditionFailed: ``if_match`` does not admit the locked Agent's version.
        AgentDeleting: the Agent is being deleted.
        Conflict: the new name is taken.
    """
    require_ids(command.namespace_id, command.agent_id)
    columns = agent_drafts.draft_columns(command)
    if not columns:
        raise errors.InvalidInput.at((), "give at least one field to change")
    request = agent_drafts.describe(columns)
    with admission.guarded(db, actor_id) as session:
        namespace, agent, change = locked(
            session,
            actor_id,
            command.namespace_id,
            command.agent_id,
            verb="update",
            request=request,
        )
        preconditions.check(command.if_match, version(agent))
        if agent.deleting:
            raise errors.AgentDeleting("the Agent is being deleted")
        agent_drafts.check_execution_mode(columns, current=agent)
        agent_drafts.check_references(session, namespace.id, columns)
        updated = agents.update_draft(session, agent.id, columns)
        granted = None
        if columns.keys() & _RUNTIME_RESOURCES:
            decision = runtime_access.decide(
                session,
                actor_id,
                "agents.update",
                {"changes": request, "grantRuntimeAccess": True},
                wanted=command.grant_runtime_access,
            )
            if decision is not None:
                granted = runtime_access.grant(
                    session, actor_id=actor_id, agent=updated, decision=decision
                )
        details = {"changes": request, **({} if granted is None else {"runtimeAccess": granted})}
        change.audit("agent", agent.id, namespace.id, details)
        return observed_agents.observe(session, updated)


def get_agent(
    db: Database, actor_id: str, *, namespace_id: str, agent_id: str
) -> observed_agents.ObservedAgent:
    """One Agent (``agent:read``).

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
    """
    require_ids(namespace_id, agent_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        agent = find(session, namespace_cases.live(session, namespace_id).id, agent_id)
        admission.require(
            session,
            actor_id,
            "agents.read",
            "agent:read",
            resource(agent),
            hide_unless_readable=True,
        )
        return observed_agents.observe(session, agent)


def list_agents(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING, *, namespace_id: str
) -> keyset.Page[observed_agents.ObservedAgent]:
    """The Namespace's Agents the caller may read (``agent:read`` per Agent), the page
    ``window`` asks for.

    Raises:
        NotFound: no such live Namespace, or the caller may read neither it nor any Agent in it.
    """
    admission.require_id("namespace", namespace_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        namespace = namespace_cases.live(session, namespace_id)
        visible = listing.readable_children(
            session,
            actor_id,
            "agents.list",
            "agent:read",
            iam.Resource.namespace(namespace.id),
            resource_of=resource,
            read=lambda rows: agents.list_in(session, namespace.id, rows),
            window=window,
        )
        return keyset.Page(observed_agents.observe_all(session, visible), visible.next_after)


# -- shared with occ.controller.agent_lifecycle and occ.controller.deployments --------------


def lock_namespace(session: Session, namespace_id: str) -> namespaces.Namespace:
    """The live Namespace under its shared lock, or ``NotFound``."""
    return namespace_cases.found_live(agents.lock_namespace(session, namespace_id))


def lock_namespace_finding(
    session: Session, namespace_id: str, agent_id: str
) -> tuple[namespaces.Namespace, agents.Agent]:
    """``lock_namespace`` and ``find`` (no Agent lock) in one statement, with the same
    answers: ``NotFound`` for a missing or tombstoned Namespace, then for a missing Agent."""
    namespace, agent = agents.lock_namespace_reading(session, namespace_id, agent_id)
    return namespace_cases.found_live(namespace), admission.found(agent, "agent")


def require_ids(namespace_id: str, agent_id: str) -> None:
    """Malformed path ids answer ``NotFound`` before any query."""
    admission.require_id("namespace", namespace_id)
    admission.require_id("agent", agent_id)


def locked(
    session: Session,
    actor_id: str,
    namespace_id: str,
    agent_id: str,
    *,
    verb: str,
    permission: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> tuple[namespaces.Namespace, agents.Agent, Change]:
    """The live Namespace (shared lock), its Agent (row lock) and the change ``permission``
    (``agent:<verb>``) on the Agent allows ``agents.<verb>`` to make; ``NotFound`` when the
    caller may not read the Agent, ``Forbidden`` (audited) when it lacks the permission."""
    namespace = lock_namespace(session, namespace_id)
    agent = find(session, namespace.id, agent_id, lock=True)
    change = admission.permitted_verb(
        session, actor_id, "agent", verb, resource(agent), permission=permission, request=request
    )
    return namespace, agent, change


def find(session: Session, namespace_id: str, agent_id: str, *, lock: bool = False) -> agents.Agent:
    """The Namespace's Agent, or ``NotFound``."""
    return admission.found(agents.get(session, namespace_id, agent_id, lock=lock), "agent")


def version(agent: agents.Agent) -> str | None:
    """The Agent's version tag (its ``updated_at``)."""
    return preconditions.tag(agent.id, updated_at=agent.updated_at)


def resource(agent: agents.Agent) -> iam.Resource:
    return iam.Resource("agent", agent.id, agent.namespace_id)
