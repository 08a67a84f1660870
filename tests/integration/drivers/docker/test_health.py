"""The ``docker`` driver on a real Docker Engine counts a gateway ready only once the engine's
health check passed (``starting`` waits, ``unhealthy`` fails the pass), and reports the startup
warnings the gateway itself answers with; its fleet observation judges the same way (a check
on its way is ``starting``, neither healthy nor to repair; a failed one is not ready)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from occ.drivers.compute import base, standin
from occ.drivers.compute.docker import DockerComputeDriver, health, naming
from occ.drivers.compute.docker import driver as driver_module
from tests.integration.drivers.docker.objects import make_driver, revision
from tests.support.processes import wait_for

STARTING_FOR_30_S = health.HealthCheck(interval_s=6.0, retries=1, start_period_s=30.0)
"""A health check still ``starting`` for the whole of a test (its first probe comes at 6 s)."""
FAILS_AT_ONCE = health.HealthCheck(interval_s=0.5, timeout_s=1.0, retries=1, start_period_s=0.0)
"""A health check that finds a sick gateway ``unhealthy`` after its first probe."""
SICK: dict[str, Any] = {"standIn": {"healthy": False}}
"""The document of a stand-in gateway that fails its health check."""


def _engine_health(client: Any, spec: base.RevisionSpec) -> str:
    attrs = client.api.inspect_container(naming.gateway(spec.revision_id))
    return str(attrs["State"]["Health"]["Status"])


def _pending_while_starting(
    docker_host: str, operation: base.Operation, spec: base.RevisionSpec, readiness_wait_s: float
) -> DockerComputeDriver:
    """A driver whose pass over ``spec`` waited while the engine's health check was starting."""
    driver = make_driver(
        docker_host, readiness_wait_s=readiness_wait_s, health_check=STARTING_FOR_30_S
    )
    assert driver.prepare_revision(operation, spec) == base.Pending("REVISION_INCOMPLETE")
    return driver


def test_a_gateway_is_not_ready_while_the_engines_health_check_is_starting(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_starting")

    driver = _pending_while_starting(docker_host, operation, spec, readiness_wait_s=1.0)
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
    driver = make_driver(docker_host, readiness_wait_s=1.0, health_check=FAILS_AT_ONCE)
    spec = revision(namespace_id, "agt_unhealthy", document=SICK)
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


def _no_answer_on_the_port(*_: object, **__: object) -> None:
    return None  # as from a worker in a container of its own: the host's loopback is not its


def _nothing_in_the_health_log(_: object) -> None:
    return None  # as for a container whose health check prints nothing (an older occ's)


@pytest.mark.parametrize(
    ("patched", "replacement"),
    [
        pytest.param(
            (standin, "status_of"), _no_answer_on_the_port, id="read-from-the-engines-health-log"
        ),
        pytest.param(
            (health, "reported"), _nothing_in_the_health_log, id="asked-on-the-published-port"
        ),
    ],
)
def test_a_ready_gateway_reports_the_warnings_it_started_with(
    docker_host: str,
    operation: base.Operation,
    namespace_id: str,
    monkeypatch: pytest.MonkeyPatch,
    patched: tuple[object, str],
    replacement: Callable[..., None],
) -> None:
    monkeypatch.setattr(*patched, replacement)
    quick = health.HealthCheck(interval_s=0.5, start_period_s=30.0)
    driver = make_driver(docker_host, health_check=quick)
    document = {"model": "m", "plugins": {"entries": {"memory": {}, "voice": {"enabled": False}}}}

    warned = _ready(driver, operation, revision(namespace_id, "agt_warned", document=document))
    plain = _ready(driver, operation, revision(namespace_id, "agt_plain"))

    assert warned.warnings == (base.StartupWarning("PLUGIN_UNAVAILABLE", "memory"),)
    assert plain.warnings == ()


def _observed(driver: DockerComputeDriver, spec: base.RevisionSpec) -> base.Observed:
    return driver.observe_revisions([spec])[spec.revision_id]


def test_the_observer_sees_a_starting_gateway_as_starting_not_healthy(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_observed_starting")
    driver = _pending_while_starting(docker_host, operation, spec, readiness_wait_s=0.5)

    seen = _observed(driver, spec)

    assert _engine_health(client, spec) == "starting"
    assert (seen.healthy, seen.starting, seen.code) == (False, True, driver_module.NOT_READY)
    ready = _ready(driver, operation, spec)
    assert _observed(driver, spec) == base.Observed(True, ready.details["endpoint"])


def test_the_observer_sees_a_gateway_stuck_unhealthy_as_not_ready(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    driver = make_driver(docker_host, readiness_wait_s=0.5, health_check=FAILS_AT_ONCE)
    spec = revision(namespace_id, "agt_observed_sick", document=SICK)
    driver.prepare_revision(operation, spec)
    wait_for(
        lambda: _engine_health(client, spec) == "unhealthy",
        timeout=30,
        message="the engine to find the gateway unhealthy",
    )

    seen = _observed(driver, spec)

    assert (seen.healthy, seen.starting, seen.code) == (False, False, driver_module.NOT_READY)


def test_the_observer_sees_an_unpaused_gateway_before_its_next_probe_as_starting(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    # the engine says "unhealthy" from a pause until its first probe after the unpause, one
    # interval later: no probe failed, so this is a gateway on its way back, not a sick one
    check = health.HealthCheck(interval_s=6.0, retries=1, start_period_s=30.0)
    driver = make_driver(docker_host, health_check=check)
    spec = revision(namespace_id, "agt_observed_unpaused")
    endpoint = _ready(driver, operation, spec).details["endpoint"]
    container = client.containers.get(naming.gateway(spec.revision_id))
    container.pause()
    paused = _observed(driver, spec)
    assert (paused.healthy, paused.starting) == (False, False)  # not serving: a repair unpauses
    container.unpause()
    state = client.api.inspect_container(container.id)["State"]

    seen = _observed(driver, spec)

    assert (state["Health"]["Status"], state["Health"]["FailingStreak"]) == ("unhealthy", 0)
    assert (seen.healthy, seen.starting) == (False, True)
    wait_for(
        lambda: _observed(driver, spec) == base.Observed(True, endpoint),
        timeout=30,
        message="the next probe to find the gateway healthy",
    )
