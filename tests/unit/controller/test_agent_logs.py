"""The pure parts of reading runtime logs: redaction and the read's own checks."""

from __future__ import annotations

import datetime as dt

import pytest

from occ.controller import agent_logs
from occ.foundation import errors


def test_every_occurrence_of_every_hidden_value_is_redacted() -> None:
    lines = ["token=abcd1234 and abcd1234", "key k3y-value", "plain line", "ab is short"]
    assert list(agent_logs.redacted(lines, ["abcd1234", "k3y-value", "ab"])) == [
        "token=[REDACTED] and [REDACTED]",
        "key [REDACTED]",
        "plain line",
        "ab is short",  # shorter than redaction.MIN_LENGTH: not hunted
    ]


def test_a_longer_value_is_redacted_before_a_value_it_contains() -> None:
    assert list(agent_logs.redacted(["x secret-long y"], ["secret", "secret-long"])) == [
        "x [REDACTED] y"
    ]


@pytest.mark.parametrize(
    ("fields", "pointer"),
    [
        ({"tail": -1}, "/tail"),
        ({"tail": agent_logs.MAX_TAIL + 1}, "/tail"),
        ({"since": dt.datetime(2026, 1, 1)}, "/since"),
    ],
)
def test_a_read_out_of_bounds_is_invalid_input(fields: dict[str, object], pointer: str) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        agent_logs.ReadLogs(namespace_id="ns_x", agent_id="agt_x", **fields)  # type: ignore[arg-type]
    assert [error.pointer for error in raised.value.errors] == [pointer]
