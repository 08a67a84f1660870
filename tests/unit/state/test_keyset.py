"""Keyset orders: which keys from outside (a cursor's) an order admits."""

from __future__ import annotations

import pytest

from occ.state import keyset

ID = "ns_00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize("order", [keyset.BY_CREATION, keyset.NEWEST_FIRST])
def test_a_key_of_a_time_and_an_id_is_admitted(order: keyset.Order) -> None:
    assert order.admits((1_700_000_000_000_000, ID))


@pytest.mark.parametrize("order", [keyset.BY_CREATION, keyset.NEWEST_FIRST])
@pytest.mark.parametrize(
    "key",
    [
        (1, "a\x00"),  # PostgreSQL text holds no NUL
        (1, "\ud800"),  # a lone surrogate cannot be encoded for the database
        (1, "caf\u00e9"),  # ids are ASCII
        (-1, ID),
        ("1", ID),
        (1,),
    ],
)
def test_a_forged_key_is_not(order: keyset.Order, key: tuple[object, ...]) -> None:
    assert not order.admits(key)
