"""The serving settings: the log level."""

from __future__ import annotations

import pytest

from tests.unit.settings.support import from_env, refusal


def test_log_level_defaults_to_info() -> None:
    assert from_env({}).log_level == "INFO"


@pytest.mark.parametrize("raw", ["debug", "Warning", "CRITICAL"])
def test_log_level_is_case_insensitive_and_stored_upper_case(raw: str) -> None:
    assert from_env({"OCC_LOG_LEVEL": raw}).log_level == raw.upper()


def test_log_level_refuses_an_unknown_level() -> None:
    refused = refusal({"OCC_LOG_LEVEL": "verbose"})
    assert [error.pointer for error in refused.errors] == ["/log_level"]
    assert "DEBUG" in refused.errors[0].message
