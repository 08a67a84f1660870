"""The ``docker`` driver on a real Docker Engine counts a gateway ready only once the engine's
health check passed (``starting`` waits, ``unhealthy`` fails the pass), and reports the startup
warnings the gateway itself answers with."""

from __future__ import annotations

import time
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, health, naming
from tests.integration.drivers.docker.objects import make_driver, revision
from tests.support.processes import wait_for


def _engine_health(client: Any, spec: base.RevisionSpec) -> str:
    attrs = client.api.inspect_container(naming.gateway(spec.revision_id))
    return str(attrs["State"]["Health"]["Status"])


def test_a_gateway_is_not_ready_while_the_engines_health_check_is_starting(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    slow = health.HealthCheck(interval_s=6.0, retries=1, start_period_s=30.0)
    driver = make_driver(docker_host, readiness_wait_s=1.0, health_check=slow)
    spec = revision(namespace_id, "agt_starting")

    assert driver.prepare_revision(operation, spec) == base.Pending("REVISION_INCOMPLETE")
    # the gateway already answers for its revision: only the engine's verdict is missing
    assert _engine_health(client, spec) == "starting"

    def ready() -> base.Ready | None:
        observation = driver.prepare_revision(operation, spec)
        if isinstance(observation, base.Ready):
            return observation
        assert _engine_health(client, spec) == "starting"
        return None

    wait_for(ready, timeout=30, interval=0.2, message="the health check to pass")
    assert _engine_health(client, spec) == "healthy"


def test_a_gateway_the_engine_finds_unhealthy_fails_the_pass(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    quick = health.HealthCheck(interval_s=0.5, timeout_s=1.0, retries=1, start_period_s=0.0)
    driver = make_driver(docker_host, readiness_wait_s=1.0, health_check=quick)
    spec = revision(namespace_id, "agt_unhealthy", document={"standIn": {"healthy": False}})
    deadline = time.monotonic() + 30

    observation = driver.prepare_revision(operation, spec)
    while isinstance(observation, base.Pending) and time.monotonic() < deadline:
        observation = driver.prepare_revision(operation, spec)

    assert isinstance(observation, base.Failed), observation
    assert (observation.code, observation.permanent) == ("RUNTIME_STARTUP_FAILED", True)
    assert _engine_health(client, spec) == "unhealthy"


def _ready(
    driver: DockerComputeDriver, operation: base.Operation, spec: base.RevisionSpec
) -> base.Ready:
    def ready() -> base.Ready | None:
        observation = driver.prepare_revision(operation, spec)
        return observation if isinstance(observation, base.Ready) else None

    return wait_for(ready, timeout=30, interval=0.2, message="the gateway to be ready")


def test_a_ready_gateway_reports_the_warnings_it_started_with(
    docker_host: str, operation: base.Operation, namespace_id: str
) -> None:
    quick = health.HealthCheck(interval_s=0.5, start_period_s=30.0)
    driver = make_driver(docker_host, health_check=quick)
    document = {"model": "m", "plugins": {"entries": {"memory": {}, "voice": {"enabled": False}}}}

    warned = _ready(driver, operation, revision(namespace_id, "agt_warned", document=document))
    plain = _ready(driver, operation, revision(namespace_id, "agt_plain"))

    assert warned.warnings == (base.StartupWarning("PLUGIN_UNAVAILABLE", "memory"),)
    assert plain.warnings == ()
