"""When the engine's word on a gateway container lets the driver count it ready."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.drivers.compute.docker import health


def _inspected(
    running: bool,
    status: str | None,
    *,
    restarting: bool = False,
    paused: bool = False,
    failing: int = 1,
) -> dict[str, Any]:
    state: dict[str, Any] = {"Running": running, "Restarting": restarting, "Paused": paused}
    if status is not None:
        state["Health"] = {"Status": status, "FailingStreak": failing}
    return {"State": state}


@pytest.mark.parametrize(
    ("inspected", "expected"),
    [
        (_inspected(True, "healthy"), health.State.PROBE),
        (_inspected(True, None), health.State.PROBE),
        (_inspected(True, "starting"), health.State.STARTING),
        (_inspected(True, "unhealthy"), health.State.UNHEALTHY),
        # the engine says unhealthy while it does not probe: paused, or unpaused and not yet
        # probed again (no failing streak)
        (_inspected(True, "unhealthy", paused=True, failing=0), health.State.EXITED),
        (_inspected(True, "unhealthy", failing=0), health.State.STARTING),
        (_inspected(False, "healthy"), health.State.EXITED),
        (_inspected(True, "healthy", restarting=True), health.State.EXITED),
        ({}, health.State.EXITED),
    ],
)
def test_only_a_passed_health_check_lets_the_gateway_be_probed(
    inspected: dict[str, Any], expected: health.State
) -> None:
    assert health.state_of(inspected) == expected


def test_the_engine_health_check_probes_healthz_at_the_configured_pace() -> None:
    config = health.HealthCheck(
        interval_s=0.5, timeout_s=1, retries=2, start_period_s=0
    ).engine_config()
    assert config["test"][:2] == ["CMD", "/usr/bin/python3"]
    assert "/healthz" in config["test"][-1]
    assert (config["interval"], config["timeout"]) == (500_000_000, 1_000_000_000)
    assert (config["retries"], config["start_period"]) == (2, 0)


def _with_health_log(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"State": {"Running": True, "Health": {"Status": "healthy", "Log": list(entries)}}}


def test_the_status_is_read_from_the_latest_passing_check() -> None:
    document = {"revisionId": "rev_1", "warnings": []}
    passed = {"ExitCode": 0, "Output": json.dumps(document)}
    assert health.reported(_with_health_log({"ExitCode": 1, "Output": ""}, passed)) == document


@pytest.mark.parametrize(
    "inspected",
    [
        {"State": {"Running": True}},  # no health check
        _with_health_log(),  # no check ran yet
        _with_health_log({"ExitCode": 0, "Output": '{"revisionId": "rev_1"}'}, {"ExitCode": 1}),
        _with_health_log({"ExitCode": 0, "Output": ""}),  # an older occ's check prints nothing
        _with_health_log({"ExitCode": 0, "Output": '{"revisionId": "rev_1", "warn'}),  # cut
    ],
)
def test_no_status_without_a_passing_check_that_printed_one(inspected: dict[str, Any]) -> None:
    assert health.reported(inspected) is None
