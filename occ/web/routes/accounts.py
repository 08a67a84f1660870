"""``/v1/namespaces/<namespace_id>/accounts``: issue, list and read managed accounts.

Representations show an account's Backend binding, never a token nor a token reference.
"""

from __future__ import annotations

from typing import Any

from occ.controller import account_withdrawals, accounts
from occ.web import calls, locations
from occ.web.routes import blueprints
from occ.web.schemas import accounts as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/accounts",
    description="Managed accounts an account Backend issued; tokens never leave the Backend.",
)


@blueprint.operation(
    "POST",
    "",
    body=schemas.AccountIssue,
    created=schemas.Account,
    requires="installation:administer",
)
@locations.at("accounts.get_account", account_id="id")
def issue_account(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Have the selected account Backend issue an account for the Namespace (``ready``)."""
    command = accounts.IssueAccount(
        namespace_id=namespace_id, name=body["name"], workspace=body["workspace"]
    )
    return calls.item(accounts.issue_account, command, backend=calls.context().drivers.accounts)


@blueprint.operation("GET", "", page=schemas.Account, named=True, requires="account:read")
def list_accounts(query: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """The Namespace's accounts the caller may read."""
    return calls.page(accounts.list_accounts, query, namespace_id=namespace_id)


@blueprint.operation("GET", "/<account_id>", item=schemas.Account, requires="account:read")
def get_account(namespace_id: str, account_id: str) -> dict[str, Any]:
    return calls.item(accounts.get_account, namespace_id=namespace_id, account_id=account_id)


@blueprint.operation(
    "POST",
    "/<account_id>/withdrawal",
    body=schemas.AccountWithdrawalBody,
    body_required=False,
    item=schemas.AccountWithdrawal,
    requires="installation:administer",
)
def record_withdrawal(body: dict[str, Any], namespace_id: str, account_id: str) -> dict[str, Any]:
    """Record that the account Backend withdrew the account (occ asks the Backend): every Agent
    running on it is set to stopped by its own credential-source withdrawal work."""
    return calls.item(
        account_withdrawals.record_withdrawal,
        namespace_id=namespace_id,
        account_id=account_id,
        backend=calls.context().drivers.accounts,
    )
