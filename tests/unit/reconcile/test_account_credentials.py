"""What occ's own record of a pinned account says when the active pointer would move."""

from __future__ import annotations

import datetime as dt

import pytest

from occ.drivers.account import ownership
from occ.reconcile import account_credentials
from occ.state import accounts

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def _account(withdrawn_at: dt.datetime | None) -> accounts.Account:
    return accounts.Account(
        id="acc_1",
        namespace_id="ns_1",
        name="codex",
        backend_id="backend",
        driver="standin",
        workspace="research",
        created_by="prn_1",
        created_at=NOW,
        updated_at=NOW,
        withdrawn_at=withdrawn_at,
    )


@pytest.mark.parametrize(
    ("account", "refusal"),
    [
        (_account(None), None),
        (_account(NOW), ownership.Refusal.WITHDRAWN),
        (None, ownership.Refusal.UNKNOWN),
    ],
)
def test_a_recorded_withdrawal_or_a_missing_account_refuses_the_move(
    account: accounts.Account | None, refusal: ownership.Refusal | None
) -> None:
    assert account_credentials.recorded_refusal(account) == refusal
