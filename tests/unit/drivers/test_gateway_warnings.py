"""The stand-in gateway's startup warnings, from its configuration."""

from __future__ import annotations

from typing import Any

import pytest

from occ.drivers import gateway_warnings

UNAVAILABLE, IGNORED = gateway_warnings.PLUGIN_UNAVAILABLE, gateway_warnings.CONFIGURATION_IGNORED


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"model": "m"}, []),
        ([], []),
        ({"plugins": ["voice", "memory"]}, [(UNAVAILABLE, "memory"), (UNAVAILABLE, "voice")]),
        (
            {"plugins": {"entries": {"memory": {"enabled": True}, "off": {"enabled": False}}}},
            [(UNAVAILABLE, "memory")],
        ),
        ({"plugins": {"entries": {}}}, []),
        ({"plugins": "memory"}, [(IGNORED, "plugins")]),
        ({"plugins": ["ok", "bad\nid"]}, [(IGNORED, "plugins"), (UNAVAILABLE, "ok")]),
    ],
)
def test_each_enabled_plugin_is_unavailable_and_an_odd_value_ignored(
    document: Any, expected: list[tuple[str, str]]
) -> None:
    warnings = gateway_warnings.of_configuration(document)
    assert [(w["code"], w["detail"]) for w in warnings] == expected


def test_at_most_the_bound_is_reported() -> None:
    document = {"plugins": [f"p{n:03}" for n in range(100)]}
    assert len(gateway_warnings.of_configuration(document)) == gateway_warnings.MAX_WARNINGS
