"""Runtime access at Agent creation: bind the built-in ``agent-runtime`` Role to the Agent's
service principal on exactly its Configuration and its harness Secret.

Runs inside the Agent's creation transaction (``occ.controller.agents``). Granting needs what
creating those bindings through ``/v1/access-bindings`` needs: ``installation:administer`` on
the Installation; asked for by default (``grantRuntimeAccess`` left out), it is granted exactly
when the caller holds that, so the default never widens what a caller can do. The Role is a
Namespace Role, created in the Agent's Namespace on first use (audited like any Role) and reused
afterwards. Never grants anything wider than the two resources, and never touches a Role of that
name that holds other permissions.
"""

from __future__ import annotations

from typing import Any, Final

from occ import iam
from occ.controller import admission, changes, installation, policy
from occ.foundation import errors
from occ.state import agents, iam_policy
from occ.state import roles as role_rows
from occ.state.db import Session

ROLE_NAME: Final = "agent-runtime"
"""The built-in Role's name in each Namespace that uses it."""

PERMISSIONS: Final = ("configuration:read", "secret:operate")
"""What a runtime needs to start: read its Configuration, use its harness Secret."""

_DENIED: Final = (
    "granting runtime access needs installation:administer (the permission to create access "
    "bindings); create the Agent without grantRuntimeAccess and have an administrator bind its "
    "service principal"
)


def decide(
    session: Session, actor_id: str, action: str, request: dict[str, Any], *, wanted: bool | None
) -> iam.Decision | None:
    """The decision to grant at creation, or ``None`` for no grant: ``wanted`` ``True`` needs
    the permission (``authorize``), ``False`` grants nothing, and ``None`` (the field left out)
    grants when the caller holds the permission, else nothing, with no denial: what the CLI
    asks for by default, never more than the caller could ask for explicitly."""
    if wanted is None:
        decision = iam.authorize(
            session, actor_id, policy.PERMISSION, installation.resource(session)
        )
        return decision if decision.allowed else None
    return authorize(session, actor_id, action, request) if wanted else None


def authorize(
    session: Session, actor_id: str, action: str, request: dict[str, Any]
) -> iam.Decision:
    """The decision allowing the caller to grant runtime access, or ``admission.Denied`` (403)."""
    target = installation.resource(session)
    return admission.require(
        session, actor_id, action, policy.PERMISSION, target, request=request, detail=_DENIED
    )


def grant(
    session: Session, *, actor_id: str, agent: agents.Agent, decision: iam.Decision
) -> dict[str, Any]:
    """Bind ``agent-runtime`` to the Agent's service principal on its two resources; audited.

    Returns what the Agent's creation audit records: the Role and the ids of the bindings it
    made (none that the service principal already holds).

    Raises:
        Conflict: a live Role named ``agent-runtime`` in the Namespace holds other permissions.
    """
    role = _role(session, actor_id, agent.namespace_id, decision)
    # a managed account is the deploying actor's to read (account:read), never the runtime's
    resources = [("configuration", agent.configuration_id)]
    if agent.harness_auth_secret_id is not None:
        resources.append(("secret", agent.harness_auth_secret_id))
    change = changes.Change(
        session=session, actor_id=actor_id, action="access_bindings.create", decision=decision
    )
    binding_ids = []
    held = {
        (binding.resource_kind, binding.resource_id)
        for binding in iam_policy.list_bindings(
            session, principal_id=agent.service_principal_id, role_id=role.id
        )
    }
    for kind, resource_id in resources:
        if (kind, resource_id) in held:
            continue  # granted before: a grant is idempotent
        binding = iam_policy.bind(
            session,
            role_id=role.id,
            principal_id=agent.service_principal_id,
            created_by=actor_id,
            namespace_id=agent.namespace_id,
            resource_kind=kind,
            resource_id=resource_id,
        )
        change.audit(
            "access_binding",
            binding.id,
            agent.namespace_id,
            {
                "roleId": role.id,
                "principalId": agent.service_principal_id,
                "namespaceId": agent.namespace_id,
                "resource": {"kind": kind, "id": resource_id},
                "grantRuntimeAccess": {"agentId": agent.id},
            },
        )
        binding_ids.append(binding.id)
    return {"roleId": role.id, "bindingIds": binding_ids}


def _role(
    session: Session, actor_id: str, namespace_id: str, decision: iam.Decision
) -> role_rows.Role:
    """The Namespace's live ``agent-runtime`` Role, created (and audited) if there is none."""
    role = role_rows.find_role(session, name=ROLE_NAME, namespace_id=namespace_id)
    if role is None:
        try:
            role = role_rows.create_role(
                session, name=ROLE_NAME, permissions=PERMISSIONS, namespace_id=namespace_id
            )
        except errors.Conflict:
            # a concurrent creation committed first (READ COMMITTED sees it now): use that one
            role = role_rows.find_role(session, name=ROLE_NAME, namespace_id=namespace_id)
            if role is None:
                raise
        else:
            created = changes.Change(
                session=session, actor_id=actor_id, action="roles.create", decision=decision
            )
            created.audit(
                "role",
                role.id,
                namespace_id,
                {
                    "name": ROLE_NAME,
                    "permissions": list(role.permissions),
                    "namespaceId": namespace_id,
                    "builtIn": True,
                },
            )
    if tuple(sorted(role.permissions)) != PERMISSIONS:
        raise errors.Conflict(
            f"the Role {ROLE_NAME} of this Namespace ({role.id}) holds other permissions than "
            + ", ".join(PERMISSIONS)
            + "; rename or delete it, or create the Agent without grantRuntimeAccess"
        )
    return role
