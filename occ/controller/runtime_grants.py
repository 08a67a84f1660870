"""Runtime access for an Agent that exists: the grant ``grantRuntimeAccess`` makes at
creation, made afterwards (an Agent created without it, or whose deploy was refused for its
service principal).

The same bindings as at creation (``occ.controller.runtime_access``): the built-in
``agent-runtime`` Role on exactly the Agent's current Configuration and harness Secret. Needs
``agent:read`` on the Agent (else ``NotFound``) and ``installation:administer``. Idempotent: a
binding the service principal already holds is not made again.
"""

from __future__ import annotations

from dataclasses import dataclass

from occ.controller import admission, runtime_access
from occ.controller import agents as agent_use_cases
from occ.foundation import errors
from occ.state.db import Database


@dataclass(frozen=True, kw_only=True)
class GrantRuntimeAccess:
    """Grant the Agent's service principal what its runtime needs."""

    namespace_id: str
    agent_id: str


@dataclass(frozen=True)
class RuntimeAccess:
    """What a grant left in place: the Role, and the bindings it made (empty: all were held)."""

    agent_id: str
    service_principal_id: str
    role_id: str
    binding_ids: tuple[str, ...]


def grant_runtime_access(db: Database, actor_id: str, command: GrantRuntimeAccess) -> RuntimeAccess:
    """Bind ``agent-runtime`` to the Agent's service principal on its Configuration and
    Secret, audited like the bindings made at creation.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller lacks ``installation:administer`` (audited).
        Conflict: the Agent has no harness Secret, or the Namespace's ``agent-runtime`` Role
            holds other permissions.
    """
    agent_use_cases.require_ids(command.namespace_id, command.agent_id)
    action = "agents.grant_runtime_access"
    with admission.guarded(db, actor_id) as session:
        _, agent, _ = agent_use_cases.locked(
            session,
            actor_id,
            command.namespace_id,
            command.agent_id,
            verb="grant_runtime_access",
            permission="agent:read",
        )
        decision = runtime_access.authorize(session, actor_id, action, {"agentId": agent.id})
        if agent.harness_auth is None:
            raise errors.Conflict("the Agent has no harness authentication; set harnessAuth first")
        granted = runtime_access.grant(session, actor_id=actor_id, agent=agent, decision=decision)
        return RuntimeAccess(
            agent_id=agent.id,
            service_principal_id=agent.service_principal_id,
            role_id=str(granted["roleId"]),
            binding_ids=tuple(granted["bindingIds"]),
        )
