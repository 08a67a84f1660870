"""Record that an account Backend withdrew a managed account, and stop the Agents running on it.

occ never takes a caller's word for a withdrawal: it asks the Backend
(``AccountBackend.withdrawn``). Recording needs ``installation:administer``; it stamps the
account's ``withdrawnAt`` and, for every live Agent whose active revision pins the account,
sets desired ``stopped`` and admits its own ``credential_source_withdrawal`` work
(``occ.reconcile.credential_withdrawal``), in one transaction with its audit
(``accounts.withdrawal``). A repeat admits nothing new (the work ids are per Agent and account).

A deploy pass of a revision pinning the account that has not moved the Agent's pointer yet
needs no stop: the move reads the account under a shared lock, which waits for this
transaction's ``FOR UPDATE`` on it (or this waits for the move, and then finds the Agent), and
fails the deployment ``CREDENTIAL_WITHDRAWN`` (``account_credentials.withdrawn_meanwhile``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from occ.controller import admission, namespaces, policy
from occ.drivers.account import AccountBackend
from occ.foundation import errors
from occ.state import accounts, agents, values, work_queue
from occ.state.db import Database
from occ.state.work_keys import WorkKey, WorkKind

ACTION: Final = "accounts.withdrawal"


@dataclass(frozen=True, kw_only=True)
class WithdrawalRecorded:
    """The withdrawn account and the Agents whose stop it admitted."""

    account: accounts.Account
    agent_ids: tuple[str, ...]


def record_withdrawal(
    db: Database,
    actor_id: str,
    *,
    namespace_id: str,
    account_id: str,
    backend: AccountBackend | None,
) -> WithdrawalRecorded:
    """Record the Backend's withdrawal of the account and admit the stops it calls for.

    Raises:
        NotFound: no such account in this live Namespace.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: no account Backend is selected, or the Backend has not withdrawn it.
    """
    admission.require_id("namespace", namespace_id)
    admission.require_id("account", account_id)
    with admission.guarded(db, actor_id) as session:
        namespace = namespaces.live(session, namespace_id, lock=True)
        change = policy.administer(session, actor_id, ACTION, {"accountId": account_id})
        # FOR UPDATE: a pass moving a pointer to a revision pinning it waits, or is waited for
        account = admission.found(
            accounts.get(session, namespace.id, account_id, lock=True), "account"
        )
        if backend is None:
            raise errors.Conflict("no account Backend is selected (OCC_ACCOUNT_BACKEND)")
        if not backend.withdrawn(account.id):
            raise errors.Conflict("the account Backend has not withdrawn this account")
        withdrawn = accounts.mark_withdrawn(session, namespace.id, account.id)
        assert withdrawn is not None  # locked above
        agent_ids = tuple(accounts.agents_running_on(session, namespace.id, account.id))
        work_ids = []
        for agent_id in agent_ids:
            agents.set_desired_state(session, agent_id, agents.DesiredRuntimeState.STOPPED)
            key = WorkKey(WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL, agent_id, account.id)
            owner = values.WorkOwner(
                namespace_id=namespace.id, actor_id=actor_id, agent_id=agent_id
            )
            work_queue.enqueue(session, key, owner)
            work_ids.append(str(key))
        change.audit(
            "account",
            account.id,
            namespace.id,
            {"agentIds": list(agent_ids), "workIds": work_ids},
        )
        return WithdrawalRecorded(account=withdrawn, agent_ids=agent_ids)
