"""Agent lifecycle use cases: stop, and delete with retry and audited takeover.

Both lock the Namespace row (shared) and then the Agent row, and write the desired state,
the audit event and the work item in one transaction. Every stop is its own work item
(``agent:<id>:reconcile:stopped:<uuid4>``); an Agent has one deletion item
(``agent:<id>:reconcile:deleted``), requeued by ``occ.retry_failed_deletion`` after a
permanent failure. Both return the Agent as admitted, with its runtime status
(``occ.controller.observed_agents.ObservedAgent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ import errors
from occ.controller import admission, observed_agents, preconditions
from occ.controller import agents as agent_use_cases
from occ.db import Database, Session
from occ.state import agents, audit, values, work_keys, work_queue


def stop_agent(
    db: Database, *, actor_id: str, namespace_id: str, agent_id: str
) -> observed_agents.ObservedAgent:
    """Admit a stop (``agent:operate``): desired ``stopped`` + audit + its own stop work item.

    Every request gets a fresh ``agent:<id>:reconcile:stopped:<uuid4>`` item.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller may read but not operate the Agent (audited).
        AgentDeleting: the Agent is being deleted.
    """
    admission.require_id("namespace", namespace_id)
    admission.require_id("agent", agent_id)
    with admission.guarded(db, actor_id) as session:
        namespace = agent_use_cases.lock_namespace(session, namespace_id)
        agent = agent_use_cases.find(session, namespace.id, agent_id, lock=True)
        decision = admission.require(
            session,
            actor_id,
            "agents.stop",
            "agent:operate",
            agent_use_cases.resource(agent),
            hide_unless_readable=True,
        )
        if agent.deleting:
            raise errors.AgentDeleting("the Agent is being deleted")
        stopped = agents.set_desired_state(session, agent.id, agents.DesiredRuntimeState.STOPPED)
        key = work_keys.agent_stopped(agent.id)
        work_queue.enqueue(session, key, _work_owner(agent, actor_id))
        audit.append(
            session,
            kind=audit.EventKind.MUTATION,
            action="agents.stop",
            actor_id=actor_id,
            outcome=audit.EventOutcome.SUCCESS,
            namespace_id=namespace.id,
            resource_kind="agent",
            resource_id=agent.id,
            work_id=str(key),
            details={
                "desiredRuntimeState": stopped.desired_runtime_state,
                "previousDesiredRuntimeState": agent.desired_runtime_state,
                "authorization": decision.evidence.as_details(),
            },
        )
        return observed_agents.observe(session, stopped)


def delete_agent(
    db: Database,
    *,
    actor_id: str,
    namespace_id: str,
    agent_id: str,
    if_match: preconditions.Expected | None = None,
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
    admission.require_id("namespace", namespace_id)
    admission.require_id("agent", agent_id)
    with admission.guarded(db, actor_id) as session:
        namespace = agent_use_cases.lock_namespace(session, namespace_id)
        agent = agent_use_cases.find(session, namespace.id, agent_id, lock=True)
        decision = admission.require(
            session,
            actor_id,
            "agents.delete",
            "agent:delete",
            agent_use_cases.resource(agent),
            hide_unless_readable=True,
        )
        preconditions.check(if_match, agent_use_cases.version(agent))
        key = work_keys.agent_deleted(agent.id)
        owner = _work_owner(agent, actor_id)
        authorization = decision.evidence.as_details()
        if not agent.deleting:
            deleting = agents.mark_deleting(session, agent.id)
            work_queue.enqueue(session, key, owner)
            _audit_delete(
                session,
                agent,
                actor_id,
                str(key),
                {
                    "status": deleting.status,
                    "previousStatus": agent.status,
                    "previousDesiredRuntimeState": agent.desired_runtime_state,
                    "authorization": authorization,
                },
            )
            return observed_agents.observe(session, deleting)
        work = work_queue.get(session, key)
        if work is None:
            # deleting without its work (an operator's repair): admit the work again
            work_queue.enqueue(session, key, owner)
            _audit_delete(
                session,
                agent,
                actor_id,
                str(key),
                {
                    "status": agents.AgentStatus.DELETING,
                    "previousStatus": agents.AgentStatus.DELETING,
                    "authorization": authorization,
                },
            )
        elif work.state == values.WorkState.FAILED_PERMANENT:
            _requeue_deletion(session, agent, work, actor_id, authorization)
        return observed_agents.observe(session, agent)


def _requeue_deletion(
    session: Session,
    agent: agents.Agent,
    work: values.WorkItem,
    actor_id: str,
    authorization: Mapping[str, Any],
) -> None:
    previous_actor = work.owner.actor_id
    if not agents.requeue_deletion(session, work.id, actor_id):
        raise errors.Conflict("the deletion could not be requeued; read the Agent and retry")
    takeover = previous_actor != actor_id
    details: dict[str, Any] = {
        "status": agents.AgentStatus.DELETING,
        "requeued": True,
        "takeover": takeover,
        "previousReasonCode": work.reason_code,
        "authorization": dict(authorization),
    }
    if takeover:
        details["previousActorId"] = previous_actor
    _audit_delete(session, agent, actor_id, work.id, details)


def _audit_delete(
    session: Session,
    agent: agents.Agent,
    actor_id: str,
    work_id: str,
    details: Mapping[str, Any],
) -> None:
    audit.append(
        session,
        kind=audit.EventKind.MUTATION,
        action="agents.delete",
        actor_id=actor_id,
        outcome=audit.EventOutcome.SUCCESS,
        namespace_id=agent.namespace_id,
        resource_kind="agent",
        resource_id=agent.id,
        work_id=work_id,
        details=details,
    )


def _work_owner(agent: agents.Agent, actor_id: str) -> values.WorkOwner:
    return values.WorkOwner(namespace_id=agent.namespace_id, actor_id=actor_id, agent_id=agent.id)
