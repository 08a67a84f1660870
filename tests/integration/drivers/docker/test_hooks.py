"""Lifecycle hooks through the ``docker`` driver on a real engine: the seeds' call points,
placeholders in the gateway's environment, compensation of a failed launch, and a failed
revocation that keeps the container.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from occ.drivers.compute import base, hooks
from occ.drivers.compute.docker import DockerComputeDriver
from tests.integration.drivers.docker import objects
from tests.support.hook_owners import RecordingOwner
from tests.support.processes import wait_for

PLACEHOLDER = {"RUNTIME_IDENTITY": "opaque-identity:docker-1"}


def _ready(driver: DockerComputeDriver, operation: base.Operation, revision: Any) -> None:
    wait_for(
        lambda: isinstance(driver.prepare_revision(operation, revision), base.Ready),
        timeout=30,
        message="the gateway to become ready",
    )


def test_hooks_run_at_the_seeds_points(
    docker_host: str, client: Any, operation: base.Operation, namespace_id: str
) -> None:
    owner = RecordingOwner(environment=PLACEHOLDER)
    driver = objects.make_driver(docker_host, hooks=hooks.HookDispatcher([owner]))
    namespace = base.NamespaceSpec(id=namespace_id, name="team")
    assert isinstance(driver.ensure_namespace(operation, namespace), base.Ready)
    revision = objects.revision(namespace_id, f"agt_{uuid.uuid4().hex[:12]}")
    _ready(driver, operation, revision)
    [container] = driver.agent_containers(namespace_id, revision.agent_id)
    environment = client.containers.get(container["Id"]).attrs["Config"]["Env"]
    assert "RUNTIME_IDENTITY=opaque-identity:docker-1" in environment

    owner.fail["before_workload_stop"] = base.TransientDriverError("REVOCATION_PENDING")
    with pytest.raises(base.TransientDriverError):
        driver.retire_revision(operation, revision)
    assert driver.agent_containers(namespace_id, revision.agent_id) != []  # kept for the retry
    del owner.fail["before_workload_stop"]
    driver.retire_revision(operation, revision)
    assert driver.agent_containers(namespace_id, revision.agent_id) == []
    assert driver.delete_namespace(operation, namespace) == base.Ready()
    assert owner.stages() == [
        "after_namespace_prepared",
        "before_workload_start",
        "before_workload_stop",
        "before_workload_stop",
        "before_namespace_delete",
    ]
    owner.assert_saw_no_secret()
    driver.engine.close()


def test_a_refused_launch_contribution_starts_nothing_and_compensates(
    docker_host: str, operation: base.Operation, namespace_id: str
) -> None:
    first = RecordingOwner(name="sandbox:recording", environment=PLACEHOLDER)
    second = RecordingOwner(environment={"LD_PRELOAD": "opaque-x"})  # a reserved name
    driver = objects.make_driver(docker_host, hooks=hooks.HookDispatcher([first, second]))
    revision = objects.revision(namespace_id, f"agt_{uuid.uuid4().hex[:12]}")
    with pytest.raises(base.PermanentDriverError) as raised:
        driver.prepare_revision(operation, revision)
    assert raised.value.code == hooks.ENVIRONMENT_INVALID
    assert driver.agent_containers(namespace_id, revision.agent_id) == []
    assert first.stages() == ["before_workload_start", "before_workload_stop"]
    assert second.stages() == ["before_workload_start", "before_workload_stop"]
    driver.engine.close()
