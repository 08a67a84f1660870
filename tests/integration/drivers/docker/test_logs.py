"""The ``docker`` driver's runtime logs on a real Docker Engine: the gateway container's
output, tail, since, follow until the container stops or the deadline, close; each read
straight from the engine and again through the log gate (``log_gate``), as the API reads in
docker compose."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from typing import Any

import pytest

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.docker import DockerComputeDriver, engine
from occ.drivers.compute.docker import logs as docker_logs
from tests.integration.drivers.docker.objects import revision
from tests.support import log_follows
from tests.support.processes import wait_for
from tests.support.specs import log_target


@pytest.fixture(params=["engine", "gate"])
def reader(request: pytest.FixtureRequest, docker_host: str) -> docker_logs.DockerLogs:
    host = docker_host if request.param == "engine" else request.getfixturevalue("gate_host")
    return docker_logs.DockerLogs(engine.Engine(host, timeout_s=10))


@pytest.fixture
def running(
    driver: DockerComputeDriver,
    operation: base.Operation,
    namespace_id: str,
    reader: docker_logs.DockerLogs,
) -> base.RevisionSpec:
    assert isinstance(
        driver.ensure_namespace(operation, base.NamespaceSpec(namespace_id, "t")), base.Ready
    )
    spec = revision(namespace_id, "agt_logs")
    observation = driver.prepare_revision(operation, spec)
    assert isinstance(observation, base.Ready), observation
    wait_for(
        lambda: list(reader.read_logs(log_target(spec), runtime_logs.LogQuery())),
        timeout=10,
        message="the gateway's first line",
    )
    return spec


def _events(lines: list[str]) -> list[Any]:
    """The gateway's own events (the engine's health probe may add other output)."""
    return [json.loads(line)["event"] for line in lines if line.startswith('{"event"')]


def test_tail_and_since_read_the_gateway_containers_output(
    reader: docker_logs.DockerLogs, running: base.RevisionSpec
) -> None:
    target = log_target(running)
    everything = list(reader.read_logs(target, runtime_logs.LogQuery()))
    assert _events(everything) == ["gateway.started"]
    assert list(reader.read_logs(target, runtime_logs.LogQuery(tail=1))) == (everything[-1:])
    assert list(reader.read_logs(target, runtime_logs.LogQuery(tail=0))) == []
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    assert list(reader.read_logs(target, runtime_logs.LogQuery(since=soon))) == []
    hour_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    since = list(reader.read_logs(target, runtime_logs.LogQuery(since=hour_ago)))
    assert since[: len(everything)] == everything


def test_follow_streams_until_the_container_stops(
    driver: DockerComputeDriver,
    operation: base.Operation,
    reader: docker_logs.DockerLogs,
    running: base.RevisionSpec,
) -> None:
    lines = reader.read_logs(
        log_target(running), runtime_logs.LogQuery(tail=0, follow=True, follow_s=60.0)
    )
    threading.Timer(0.5, driver.stop_revision, (operation, running)).start()
    started = time.monotonic()
    assert _events(list(lines)) == ["gateway.stopped"]
    assert time.monotonic() - started < 30.0


def test_a_quiet_follow_ends_at_its_deadline_or_when_closed(
    reader: docker_logs.DockerLogs, running: base.RevisionSpec
) -> None:
    started = time.monotonic()
    query = runtime_logs.LogQuery(tail=0, follow=True, follow_s=1.5)
    assert list(reader.read_logs(log_target(running), query)) == []
    assert 1.0 <= time.monotonic() - started < 8.0
    log_follows.assert_closed_early(log_follows.follow(reader, running, 60.0), within_s=8.0)


def test_a_revision_without_a_container_is_unavailable(
    reader: docker_logs.DockerLogs, namespace_id: str
) -> None:
    with pytest.raises(base.PermanentDriverError) as raised:
        reader.read_logs(log_target(revision(namespace_id, "agt_none")), runtime_logs.LogQuery())
    assert raised.value.code == runtime_logs.UNAVAILABLE
