"""The log gate's rule: which requests reach the Docker Engine, and what of an inspection."""

from __future__ import annotations

import pytest

from occ.drivers.compute.docker import log_gate, naming

GATEWAY = naming.gateway("rev_1")


@pytest.mark.parametrize(
    ("target", "reach"),
    [
        ("/_ping", log_gate.Reach.ENGINE),
        ("/version", log_gate.Reach.ENGINE),
        ("/v1.45/version", log_gate.Reach.ENGINE),
        (f"/v1.45/containers/{GATEWAY}/logs?stdout=1&stderr=1&tail=10", log_gate.Reach.LOGS),
        (f"/containers/{GATEWAY}/logs?follow=1", log_gate.Reach.LOGS),
        (f"/v1.45/containers/{GATEWAY}/json", log_gate.Reach.INSPECT),
    ],
)
def test_a_gateway_log_read_gets_through(target: str, reach: log_gate.Reach) -> None:
    assert log_gate.passage("GET", target) == log_gate.Passage(reach, target)
    assert log_gate.passage("HEAD", target) == log_gate.Passage(reach, target)


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", f"/v1.45/containers/{GATEWAY}/logs"),
        ("DELETE", f"/v1.45/containers/{GATEWAY}"),
        ("POST", "/v1.45/containers/create"),
        ("POST", f"/v1.45/containers/{GATEWAY}/exec"),
        ("GET", "/v1.45/containers/json"),
        ("GET", f"/v1.45/containers/{GATEWAY}/archive?path=/"),
        ("GET", f"/v1.45/containers/{GATEWAY}/export"),
        ("GET", f"/v1.45/containers/{GATEWAY}/json?size=1"),
        ("GET", "/v1.45/containers/occ-postgres/logs"),
        ("GET", f"/v1.45/containers/{GATEWAY}x/logs"),
        ("GET", f"/v1.45/containers/{GATEWAY}/../../images/json/logs"),
        ("GET", f"/v1.45/containers/{GATEWAY}%2F..%2Fx/logs"),
        ("GET", "/v1.45/images/json"),
        ("GET", "/v1.45/info"),
        ("GET", "/v2.0/version/x"),
        ("GET", "/v1.45/secrets"),
    ],
)
def test_anything_else_is_refused(method: str, target: str) -> None:
    assert log_gate.passage(method, target) is None


def test_an_inspection_keeps_only_what_a_log_read_needs() -> None:
    document = {
        "Id": "abc",
        "Name": f"/{GATEWAY}",
        "Config": {"Tty": False, "Env": ["A=1"], "Labels": {"x": "y"}},
        "HostConfig": {"Binds": ["/secret:/secret"]},
        "Mounts": [{"Source": "/run/credential"}],
    }
    assert log_gate.cut_inspection(document) == {
        "Id": "abc",
        "Name": f"/{GATEWAY}",
        "Config": {"Tty": False},
    }
    assert log_gate.cut_inspection({"Id": "b", "Config": {"Tty": True}})["Config"] == {"Tty": True}
