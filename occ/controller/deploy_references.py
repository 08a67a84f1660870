"""A deploy's reference permissions: ``configuration:read`` on the Agent's Configuration and
``secret:operate`` on its harness Secret, for the caller and the Agent's service principal, and
what a refusal says.
"""

from __future__ import annotations

from typing import Any

from occ import iam
from occ.controller import admission
from occ.controller import agents as agent_use_cases
from occ.state import agents
from occ.state.db import Session


def authorize(
    session: Session,
    actor_id: str,
    agent: agents.Agent,
    secret_id: str | None,
    policies: iam.PolicyCache,
) -> dict[str, Any]:
    """``configuration:read`` and ``secret:operate`` for the caller and the service principal.

    A denial is hidden (404) when the caller may not read the Agent, else 403.
    """
    targets = [
        (
            "configuration:read",
            iam.Resource("configuration", agent.configuration_id, agent.namespace_id),
        )
    ]
    if secret_id is not None:
        targets.append(("secret:operate", iam.Resource("secret", secret_id, agent.namespace_id)))
    evidence: dict[str, Any] = {}
    for role, principal_id in (
        ("caller", actor_id),
        ("servicePrincipal", agent.service_principal_id),
    ):
        for permission, target in targets:
            decision = iam.authorize(session, principal_id, permission, target, policies=policies)
            if not decision.allowed:
                hidden = not iam.authorize(
                    session,
                    actor_id,
                    "agent:read",
                    agent_use_cases.resource(agent),
                    policies=policies,
                ).allowed
                raise admission.Denied(
                    action="agents.deploy",
                    permission=permission,
                    resource=target,
                    decision=decision,
                    hidden=hidden,
                    request={
                        "agentId": agent.id,
                        "principalId": principal_id,
                        "principalRole": role,
                    },
                    detail=missing(role, principal_id, permission, target, decision.reason),
                )
            evidence[f"{role}:{permission}"] = decision.evidence.as_details()
    return evidence


def missing(
    role: str, principal_id: str, permission: str, target: iam.Resource, reason: iam.Reason
) -> str:
    """What a refused deploy says: which principal lacks which permission on what, and why."""
    if role == "caller":
        who = f"the caller ({principal_id})"
    else:
        who = f"the Agent's service principal {principal_id}"
    text = f"{who} lacks {permission} on {target.kind} {target.id} ({reason})"
    if role != "caller" and reason == iam.Reason.NO_MATCHING_BINDING:
        text += (
            "; bind it to a Role holding it (grantRuntimeAccess at Agent creation does this, "
            "POST .../agents/{agentId}/runtime-access does it afterwards, or POST "
            "/v1/access-bindings)"
        )
    return text
