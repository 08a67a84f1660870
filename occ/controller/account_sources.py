"""A deploy's managed-account harness source: authorize it and pin it exactly.

The deploying caller must hold ``account:read`` on the Agent's account (the Agent's service
principal needs nothing on it: the worker delivers the token). The account must be live in
occ, and the selected account Backend must answer a current token reference whose credential
belongs to that account under the Backend binding occ verified at issue. The revision then
pins the account, that exact token reference and that binding (never the token): a later
rotation, move or withdrawal at the Backend never changes an admitted revision, and the worker
checks the pin again before effects (``occ.reconcile.revision_store``).
"""

from __future__ import annotations

from typing import Any

from occ import iam
from occ.controller import admission
from occ.drivers.account import AccountBackend, Binding, ownership
from occ.foundation import errors
from occ.state import accounts, agents
from occ.state.db import Session

PATH: errors.Path = ("harness_auth", "account_id")


def pin(
    session: Session,
    actor_id: str,
    agent: agents.Agent,
    account_id: str,
    *,
    backend: AccountBackend | None,
    policies: iam.PolicyCache,
    hidden: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The revision's ``harness_auth`` for the Agent's account and the decision's evidence.

    Raises:
        Forbidden/NotFound: the caller lacks ``account:read`` on the account (audited; hidden
            when the caller may not read the Agent).
        Conflict: no account Backend is selected, the account was withdrawn, or the Backend's
            answer no longer matches the binding occ verified at issue.
    """
    account = accounts.get(session, agent.namespace_id, account_id)
    assert account is not None  # the Agent's foreign key keeps it
    target = iam.Resource("account", account.id, account.namespace_id)
    decision = iam.authorize(session, actor_id, "account:read", target, policies=policies)
    if not decision.allowed:
        raise admission.Denied(
            action="agents.deploy",
            permission="account:read",
            resource=target,
            decision=decision,
            hidden=hidden,
            request={"agentId": agent.id, "principalId": actor_id, "principalRole": "caller"},
            detail=f"the caller ({actor_id}) lacks account:read on account {account.id}",
        )
    if backend is None:
        raise errors.Conflict("no account Backend is selected (OCC_ACCOUNT_BACKEND)")
    if account.withdrawn:
        raise errors.Conflict("the account Backend withdrew the Agent's account")
    reference = backend.current_token(account.id)
    binding = Binding(account.backend_id, account.driver, account.workspace)
    if reference is None:
        raise errors.Conflict("the account Backend withdrew the Agent's account")
    refused = ownership.refusal(
        ownership.Pinned(account.id, reference, binding), backend.credential(reference)
    )
    if refused is not None:
        raise errors.Conflict(f"the account's credential cannot be used: {refused}")
    pinned = {
        "kind": agents.ACCOUNT_SOURCE,
        "accountId": account.id,
        "tokenReference": reference,
        "backendId": binding.backend_id,
        "driver": binding.driver,
        "workspace": binding.workspace,
    }
    return pinned, {"caller:account:read": decision.evidence.as_details()}
