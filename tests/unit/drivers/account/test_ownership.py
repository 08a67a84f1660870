"""The pure checks on a pinned managed-account credential."""

from __future__ import annotations

import pytest

from occ.drivers.account import Binding, Credential
from occ.drivers.account.ownership import Pinned, Refusal, refusal
from occ.foundation import ids

ACCOUNT = ids.new("account")
BINDING = Binding("standin-one", "standin", "research")
PINNED = Pinned(ACCOUNT, f"standin/{ACCOUNT}/1", BINDING)


def test_the_pinned_owner_under_the_pinned_binding_may_be_used() -> None:
    assert refusal(PINNED, Credential(ACCOUNT, BINDING, withdrawn=False)) is None


@pytest.mark.parametrize(
    ("credential", "expected"),
    [
        (None, Refusal.UNKNOWN),
        (Credential(ACCOUNT, BINDING, withdrawn=True), Refusal.WITHDRAWN),
        (Credential(ids.new("account"), BINDING, withdrawn=False), Refusal.OTHER_ACCOUNT),
        (
            Credential(ACCOUNT, Binding("standin-two", "standin", "research"), withdrawn=False),
            Refusal.OTHER_BACKEND,
        ),
        (
            Credential(ACCOUNT, Binding("standin-one", "other", "research"), withdrawn=False),
            Refusal.OTHER_BACKEND,
        ),
        (
            Credential(ACCOUNT, Binding("standin-one", "standin", "sales"), withdrawn=False),
            Refusal.OTHER_BACKEND,
        ),
    ],
)
def test_a_credential_that_moved_or_was_withdrawn_is_refused(
    credential: Credential | None, expected: Refusal
) -> None:
    assert refusal(PINNED, credential) is expected


def test_ownership_is_checked_before_withdrawal() -> None:
    """A withdrawn credential of another account says it is another account's."""
    other = Credential(ids.new("account"), BINDING, withdrawn=True)
    assert refusal(PINNED, other) is Refusal.OTHER_ACCOUNT
