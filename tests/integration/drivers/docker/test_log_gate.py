"""The log gate in front of a real Docker Engine: a gateway's inspection comes through cut to
what a log read needs, and every other request is refused before it reaches the engine (the
reads themselves through the gate: ``test_logs.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, log_gate, naming
from tests.integration.drivers.docker.objects import revision


def ask(host: str, method: str, target: str, body: Any = None) -> tuple[int, Any]:
    connection = log_gate.UnixConnection(host.removeprefix("unix://"), timeout_s=10)
    try:
        payload = None if body is None else json.dumps(body)
        headers = {} if body is None else {"Content-Type": "application/json"}
        connection.request(method, target, body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_a_gateways_inspection_comes_through_cut(
    gate_host: str,
    docker_host: str,
    driver: DockerComputeDriver,
    operation: base.Operation,
    namespace_id: str,
) -> None:
    assert isinstance(
        driver.ensure_namespace(operation, base.NamespaceSpec(namespace_id, "t")), base.Ready
    )
    spec = revision(namespace_id, "agt_gate")
    assert isinstance(driver.prepare_revision(operation, spec), base.Ready)
    target = f"/containers/{naming.gateway(spec.revision_id)}/json"
    status, whole = ask(docker_host, "GET", target)
    assert status == 200 and whole["Config"]["Env"] and whole["HostConfig"]
    status, cut = ask(gate_host, "GET", target)
    assert status == 200
    assert cut == {"Id": whole["Id"], "Name": whole["Name"], "Config": {"Tty": False}}


@pytest.mark.parametrize(
    ("method", "target", "body"),
    [
        ("POST", "/containers/create?name=occ-gw-0000000000000000", {"Image": "busybox"}),
        ("GET", "/containers/json?all=1", None),
        ("GET", "/images/json", None),
        ("GET", "/info", None),
        ("POST", "/networks/create", {"Name": "occ-gate-test"}),
    ],
)
def test_every_other_request_is_refused_before_the_engine(
    gate_host: str, docker_host: str, method: str, target: str, body: Any
) -> None:
    status, answer = ask(gate_host, method, target, body)
    assert status == 403
    assert "gateway log reads only" in answer["message"]
    status, containers = ask(docker_host, "GET", "/containers/json?all=1")
    assert status == 200
    assert "/occ-gw-0000000000000000" not in [n for c in containers for n in c["Names"]]
    status, networks = ask(docker_host, "GET", "/networks")
    assert "occ-gate-test" not in [network["Name"] for network in networks]


def test_the_engines_answers_pass_through(gate_host: str) -> None:
    status, version = ask(gate_host, "GET", "/version")
    assert status == 200 and version["ApiVersion"]
    missing = naming.gateway("rev_none")
    status, answer = ask(gate_host, "GET", f"/containers/{missing}/logs?stdout=1")
    assert status == 404 and "No such container" in answer["message"]
