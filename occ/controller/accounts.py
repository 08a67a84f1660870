"""Managed-account use cases: issue an account through the account Backend, read and list them.

An account is issued by the selected account Backend (``occ.drivers.account``) into one of its
workspaces, for one Namespace; issuing needs ``installation:administer`` (it binds the
Installation to an outside Backend). Reading needs ``account:read`` on the account, and shows
its name and Backend binding, never a token nor a token reference. Accounts are not deleted
through occ: their Backend withdraws them (``withdrawn`` then tells when occ learnt it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from occ.controller import (
    admission,
    contents,
    namespaces,
    policy,
    preconditions,
)
from occ.drivers.account import WORKSPACE_PATTERN, AccountBackend
from occ.foundation import errors, ids
from occ.state import accounts as state
from occ.state import keyset
from occ.state.db import Database

ISSUE_ACTION: Final = "accounts.issue"

ITEMS: Final = contents.Items(
    kind="account",
    noun="account",
    get=state.get,
    list_in=state.list_in,
    version=lambda account: preconditions.tag(account.id, updated_at=account.updated_at),
)


@dataclass(frozen=True, kw_only=True)
class IssueAccount:
    """A new managed account of a Namespace: its name and the Backend workspace it joins."""

    namespace_id: str
    name: str
    workspace: str


def issue_account(
    db: Database, actor_id: str, command: IssueAccount, *, backend: AccountBackend | None
) -> state.Account:
    """Have the Backend issue an account for the Namespace (``installation:administer``).

    The Backend issues inside the transaction, after the authorization; an account the Backend
    issued whose row then fails to commit stays unknown to occ (no Agent can name it).

    Raises:
        NotFound: no such live Namespace.
        InvalidInput: a bad ``name`` or ``workspace``.
        Forbidden: the caller may not administer the Installation (audited).
        NamespaceNotReady: the Namespace is not ``ready``.
        Conflict: no account Backend is selected, or the name is taken in the Namespace.
    """
    admission.require_id("namespace", command.namespace_id)
    name = admission.name(command.name, ("name",))
    if not WORKSPACE_PATTERN.fullmatch(command.workspace):
        raise errors.InvalidInput.at(
            ("workspace",), "must be 1 to 128 letters, digits, '.', '_' or '-'"
        )
    account_id = ids.new("account")
    request = {"name": name, "workspace": command.workspace}
    with admission.guarded(db, actor_id) as session:
        namespace = namespaces.live(session, command.namespace_id, lock=True)
        change = policy.administer(session, actor_id, ISSUE_ACTION, request)
        admission.require_ready(namespace.status)
        if backend is None:
            raise errors.Conflict("no account Backend is selected (OCC_ACCOUNT_BACKEND)")
        if state.find_named(session, namespace.id, name) is not None:
            raise errors.Conflict("an account with this name exists in the Namespace")
        binding = backend.issue(namespace.id, account_id, command.workspace)
        account = state.insert(
            session,
            account_id=account_id,
            namespace_id=namespace.id,
            name=name,
            backend_id=binding.backend_id,
            driver=binding.driver,
            workspace=binding.workspace,
            created_by=actor_id,
        )
        change.audit(
            "account",
            account.id,
            namespace.id,
            {
                "name": name,
                "backendId": binding.backend_id,
                "driver": binding.driver,
                "workspace": binding.workspace,
            },
        )
        return account


def get_account(
    db: Database, actor_id: str, *, namespace_id: str, account_id: str
) -> state.Account:
    """An account (``account:read``).

    Raises:
        NotFound: no such account in this live Namespace, or the caller may not read it
            (audited).
    """
    return ITEMS.read(db, actor_id, namespace_id, account_id)


def list_accounts(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING, *, namespace_id: str
) -> keyset.Page[state.Account]:
    """The Namespace's accounts the caller may read (``account:read`` per item), the page
    ``window`` asks for.

    Raises:
        NotFound: no such live Namespace, or the caller may read neither the Namespace, nor
            accounts in it, nor any of its accounts (audited).
    """
    return ITEMS.page(db, actor_id, namespace_id, window)
