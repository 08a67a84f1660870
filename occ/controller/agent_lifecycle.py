"""Agent lifecycle use cases: stop, repair, and delete with retry and audited takeover.

Both lock the Namespace row (shared) and then the Agent row, and write the desired state,
the audit event and the work item in one transaction. Every stop is its own work item
(``agent:<id>:reconcile:stopped:<uuid4>``); an Agent has one deletion item
(``agent:<id>:reconcile:deleted``), requeued by ``occ.retry_failed_deletion`` after a
permanent failure. Each takes its command value (``StopAgent``, ``DeleteAgent``) and returns
the Agent as admitted, with its runtime status (``occ.controller.observed_agents.ObservedAgent``).
"""

from __future__ import annotations

from dataclasses import dataclass

from occ.controller import admission, deletions, observed_agents, preconditions
from occ.controller import agents as agent_use_cases
from occ.controller.changes import Change
from occ.foundation import errors
from occ.state import (
    agents,
    namespaces,
    repairs,
    runtime_observations,
    values,
    work_keys,
    work_queue,
)
from occ.state.db import Database, Session


@dataclass(frozen=True, kw_only=True)
class StopAgent:
    """A stop of an Agent's runtime."""

    namespace_id: str
    agent_id: str


@dataclass(frozen=True, kw_only=True)
class RepairAgent:
    """A repair of an Agent's running revision, asked for by a person."""

    namespace_id: str
    agent_id: str


@dataclass(frozen=True, kw_only=True)
class DeleteAgent:
    """The deletion of an Agent, if it still has the version ``if_match`` admits."""

    namespace_id: str
    agent_id: str
    if_match: preconditions.Expected | None = None


def stop_agent(db: Database, actor_id: str, command: StopAgent) -> observed_agents.ObservedAgent:
    """Admit a stop (``agent:operate``): desired ``stopped`` + audit + its own stop work item.

    Every request gets a fresh ``agent:<id>:reconcile:stopped:<uuid4>`` item.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller may read but not operate the Agent (audited).
        AgentDeleting: the Agent is being deleted.
    """
    agent_use_cases.require_ids(command.namespace_id, command.agent_id)
    with admission.guarded(db, actor_id) as session:
        namespace, agent, change = _locked_undeleted(
            session, actor_id, command, verb="stop", permission="agent:operate"
        )
        stopped = agents.set_desired_state(session, agent.id, agents.DesiredRuntimeState.STOPPED)
        key = work_keys.agent_stopped(agent.id)
        work_queue.enqueue(session, key, _work_owner(agent, actor_id))
        change.audit(
            "agent",
            agent.id,
            namespace.id,
            {
                "desiredRuntimeState": stopped.desired_runtime_state,
                "previousDesiredRuntimeState": agent.desired_runtime_state,
            },
            work_id=str(key),
        )
        return observed_agents.observe(session, stopped)


def repair_agent(
    db: Database, actor_id: str, command: RepairAgent
) -> observed_agents.ObservedAgent:
    """Admit a repair of the Agent's active revision now (``agent:deploy``, audited
    ``agents.repair``): its repairs are counted afresh (the observer gives up after
    ``MAX_REPAIRS`` in a row and waits for a person) and a repair item owned by the caller is
    admitted, unless one is queued or running already.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller may read but not deploy the Agent (audited).
        AgentDeleting: the Agent is being deleted.
        AgentNotRunning: the Agent is stopped or has no active revision.
    """
    agent_use_cases.require_ids(command.namespace_id, command.agent_id)
    with admission.guarded(db, actor_id) as session:
        namespace, agent, change = _locked_undeleted(
            session, actor_id, command, verb="repair", permission="agent:deploy"
        )
        revision_id = agent.active_revision_id
        if agent.desired_runtime_state != agents.DesiredRuntimeState.RUNNING or not revision_id:
            raise errors.AgentNotRunning("the Agent has no running revision to repair")
        runtime_observations.reset_repairs(session, agent.id, revision_id)
        owner = values.WorkOwner(
            namespace_id=agent.namespace_id,
            actor_id=actor_id,
            agent_id=agent.id,
            revision_id=revision_id,
        )
        key = (
            None
            if repairs.live(session, agent.id, revision_id)
            else repairs.enqueue(session, owner)
        )
        change.audit(
            "agent",
            agent.id,
            namespace.id,
            {"revisionId": revision_id},
            work_id=str(key) if key else None,
        )
        return observed_agents.observe(session, agent)


def _locked_undeleted(
    session: Session,
    actor_id: str,
    command: StopAgent | RepairAgent,
    *,
    verb: str,
    permission: str,
) -> tuple[namespaces.Namespace, agents.Agent, Change]:
    """``agents.locked`` for an action that needs the Agent not being deleted
    (``AgentDeleting`` otherwise)."""
    namespace, agent, change = agent_use_cases.locked(
        session,
        actor_id,
        command.namespace_id,
        command.agent_id,
        verb=verb,
        permission=permission,
    )
    if agent.deleting:
        raise errors.AgentDeleting("the Agent is being deleted")
    return namespace, agent, change


def delete_agent(
    db: Database, actor_id: str, command: DeleteAgent
) -> observed_agents.ObservedAgent:
    """Admit an Agent deletion (``agent:delete``): ``deleting`` + desired ``stopped`` + audit +
    work ``agent:<id>:reconcile:deleted``.

    A repeat while that work is queued or claimed changes nothing. Once it failed permanently,
    a repeat requeues it for the caller; a caller other than the original actor takes it over
    (audited with the previous actor).

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller may read but not delete the Agent (audited).
        PreconditionFailed: ``if_match`` does not admit the locked Agent's version.
    """
    agent_use_cases.require_ids(command.namespace_id, command.agent_id)
    with admission.guarded(db, actor_id) as session:
        _, agent, change = agent_use_cases.locked(
            session, actor_id, command.namespace_id, command.agent_id, verb="delete"
        )
        preconditions.check(command.if_match, agent_use_cases.version(agent))
        deletion = deletions.Deletion(
            resource_kind="agent",
            resource_id=agent.id,
            key=work_keys.agent_deleted(agent.id),
            owner=_work_owner(agent, actor_id),
            authorization=change.decision.evidence.as_details(),
            deleting=agents.AgentStatus.DELETING,
            requeue=agents.requeue_deletion,
            what="Agent",
        )
        if agent.deleting:
            deletions.repeat(session, deletion)
            return observed_agents.observe(session, agent)
        deleting = agents.mark_deleting(session, agent.id)
        deletions.admit(
            session,
            deletion,
            agent.status,
            {"previousDesiredRuntimeState": agent.desired_runtime_state},
        )
        return observed_agents.observe(session, deleting)


def _work_owner(agent: agents.Agent, actor_id: str) -> values.WorkOwner:
    return values.WorkOwner(namespace_id=agent.namespace_id, actor_id=actor_id, agent_id=agent.id)
