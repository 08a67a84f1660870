"""A gateway's startup warnings on Kubernetes: which Pod's log is read, and what its
``gateway.started`` line says (none, the warnings, or malformed evidence)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.drivers import gateway_warnings
from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import naming, startup

REV = "rev_1"
W = base.StartupWarning


def _pod(
    name: str,
    *,
    revision: str = REV,
    ready: bool = True,
    created: str = "2026-01-01T00:00:00Z",
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "creationTimestamp": created,
        "annotations": {naming.REVISION_ANNOTATION: revision},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": metadata, "status": {"conditions": [condition]}}


def _started(revision: str = REV, warnings: Any = ()) -> str:
    fields = {"event": gateway_warnings.STARTED, "revisionId": revision, "warnings": warnings}
    return json.dumps(fields, separators=(",", ":"))


def test_the_newest_ready_pod_of_the_revision_is_read() -> None:
    pods = [
        _pod("old", created="2026-01-01T00:00:00Z"),
        _pod("new", created="2026-01-01T00:05:00Z"),
        _pod("unready", created="2026-01-01T00:09:00Z", ready=False),
        _pod("leaving", created="2026-01-01T00:09:00Z", deleting=True),
        _pod("other", created="2026-01-01T00:09:00Z", revision="rev_2"),
    ]
    assert startup.ready_pod(pods, REV) == "new"


def test_no_ready_pod_of_the_revision_is_none() -> None:
    pods = [_pod("unready", ready=False), _pod("other", revision="rev_2"), {"metadata": {}}]
    assert startup.ready_pod(pods, REV) is None
    assert startup.ready_pod([], REV) is None


def test_the_started_line_gives_the_warnings_in_the_gateways_order() -> None:
    warnings = [
        {"code": "PLUGIN_UNAVAILABLE", "detail": "voice"},
        {"code": "CONFIGURATION_IGNORED", "detail": "plugins"},
    ]
    log = "\n".join(["booting", _started(warnings=warnings), '{"event":"gateway.request"}', ""])
    assert startup.warnings_in(log, REV) == (
        W("PLUGIN_UNAVAILABLE", "voice"),
        W("CONFIGURATION_IGNORED", "plugins"),
    )


@pytest.mark.parametrize(
    "log",
    [
        "",
        "not json at all\n",
        '{"event":"gateway.failed","revisionId":"rev_1"}\n',
        _started() + "\n",
        '{"event":"gateway.started","revisionId":"rev_1"}\n',  # no warnings field: none
    ],
)
def test_a_log_without_warnings_reports_none(log: str) -> None:
    assert startup.warnings_in(log, REV) == ()


@pytest.mark.parametrize(
    "line",
    [
        _started(warnings="PLUGIN_UNAVAILABLE"),
        _started(warnings=[{"code": "PLUGIN_UNAVAILABLE"}]),
        _started(warnings=[{"code": 1, "detail": "x"}]),
        _started(warnings=["PLUGIN_UNAVAILABLE"]),
        _started(revision="rev_2"),
        '{"event":"gateway.started","revisionId":"rev_1","warnings":[{"code":',
        '["gateway.started"]',
    ],
)
def test_a_malformed_started_line_is_none(line: str) -> None:
    assert startup.warnings_in(line + "\n", REV) is None


def test_only_the_first_started_line_counts() -> None:
    first = _started(warnings=[{"code": "PLUGIN_UNAVAILABLE", "detail": "memory"}])
    log = "\n".join([first, _started(warnings="garbage"), ""])
    assert startup.warnings_in(log, REV) == (W("PLUGIN_UNAVAILABLE", "memory"),)


def test_a_last_line_without_its_end_is_not_read() -> None:
    """A read cut at its limit (or a gateway still writing) ends in a partial line."""
    cut = '{"event":"gateway.started","revisionId":"rev_1","warnings":[{"co'
    assert startup.warnings_in("booting\n" + cut, REV) == ()
    assert startup.warnings_in("booting\n" + cut + "\n", REV) is None
