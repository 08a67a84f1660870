"""Faults on the ``docker`` driver through real workers: the engine stopped in the middle of a
deploy (on an engine of the test's own), and the driver worker killed with SIGKILL mid-deploy."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from occ.controller import installation
from occ.drivers.compute import standin
from occ.drivers.compute.docker import workload
from occ.state.db import Database
from scripts import docker_engine
from tests.integration.drivers.docker import world
from tests.integration.drivers.docker.objects import sweep
from tests.support import processes, worker_worlds
from tests.support.processes import wait_for


@pytest.fixture
def own_engine() -> Iterator[docker_engine.PrivateEngine]:
    """A ``dockerd`` only this test uses (it is stopped and started again)."""
    engine = docker_engine.PrivateEngine(
        Path(tempfile.mkdtemp(prefix="occd-")), address_pool="10.198.0.0/16"
    )
    try:
        engine.start()
        engine.build_image()
        yield engine
    finally:
        engine.remove()


def _pause(client: Any, container_id: str) -> bool:
    """Pause the container once it runs (``False`` while it does not run yet)."""
    try:
        client.api.pause(container_id)
    except docker.errors.APIError:
        return False
    return True


def _deploy_with_paused_gateway(
    db: Database, env: dict[str, str], client: Any, w: world.World
) -> str:
    """Deploy and pause the revision's gateway container as soon as it runs; the revision id."""
    revision_id = world.deploy(db, w)
    world.send_nudge(env)
    [created] = wait_for(
        lambda: world.gateways(client, revision_id=revision_id),
        timeout=30,
        interval=0.005,
        message="the gateway container to be created",
    )
    wait_for(
        lambda: _pause(client, created.id),
        timeout=30,
        interval=0.005,
        message="the starting gateway to be paused",
    )
    return revision_id


def _published_endpoint(client: Any, container_id: str) -> str | None:
    port = workload.published_port(client.api.inspect_container(container_id))
    return None if port is None else standin.endpoint(port)


def test_the_engine_stopped_mid_deploy_the_work_retries_and_converges_when_it_is_back(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    own_engine: docker_engine.PrivateEngine,
) -> None:
    env.update(
        OCC_COMPUTE_DRIVER="docker",
        OCC_DOCKER_HOST=own_engine.host,
        OCC_DOCKER_REQUEST_TIMEOUT_MS="5000",
        OCC_CLAIM_INTERVAL_MS="500",
    )
    installation.bootstrap_installation(db, name="docker", admin_name="admin")
    fleet.control_worker()
    fleet.worker("drivers")
    fleet.beat()
    w = world.make(db, env)
    client = docker.DockerClient(base_url=own_engine.host, timeout=30)
    # paused as soon as it runs, it cannot answer: the deploy cannot finish before the stop
    revision_id = _deploy_with_paused_gateway(db, env, client, w)
    work_id = f"agent_revision:{revision_id}:reconcile"
    client.close()
    own_engine.stop()  # containers stop with the engine; published ports go away

    passes = world.reconcile_passes(db, work_id)
    wait_for(
        lambda: world.reconcile_passes(db, work_id) >= passes + 2,
        timeout=30,
        message="passes while the engine is down",
    )
    assert world.state_is(db, w, revision_id, "pending", "active")
    if world.state_is(db, w, revision_id, "active"):
        pytest.fail("the deploy finished before the engine stopped: the fault was not injected")

    started = time.monotonic()
    own_engine.start()
    # the deploy converges once the engine is back
    worker_worlds.wait_state(db, w, revision_id, "active", timeout=60)
    assert world.deployment(db, w, revision_id).reason_code != "MAX_ATTEMPTS_EXHAUSTED"
    client = docker.DockerClient(base_url=own_engine.host, timeout=30)
    try:
        [container] = world.gateways(client, revision_id=revision_id)
        endpoint = world.agent(db, w).endpoint
        # the endpoint is the port published now, after the engine restarted the container
        assert endpoint is not None and endpoint == _published_endpoint(client, container.id)
        health = world.health(endpoint)
        assert (health["revisionId"], health["credentialFingerprint"]) == (
            revision_id,
            world.fingerprint(env, revision_id),
        )
    finally:
        client.close()
    assert time.monotonic() - started < 60


def test_a_driver_worker_killed_mid_deploy_leaves_one_gateway_for_the_active_revision(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    docker_host: str,
    client: Any,
) -> None:
    env.update(OCC_COMPUTE_DRIVER="docker", OCC_DOCKER_HOST=docker_host)
    installation.bootstrap_installation(db, name="docker", admin_name="admin")
    fleet.control_worker()
    doomed = fleet.worker("doomed")
    w = world.make(db, env)
    try:
        # paused as soon as it runs, it cannot answer: the doomed pass cannot finish first
        revision_id = _deploy_with_paused_gateway(db, env, client, w)
        doomed.kill_group()
        interrupted = world.state_is(db, w, revision_id, "pending")

        fleet.worker("rescuer")
        fleet.beat()
        # recovery finishes the deploy
        worker_worlds.wait_state(db, w, revision_id, "active", timeout=60)
        assert interrupted, "the deploy finished before the worker was killed"
        [container] = world.gateways(client, revision_id=revision_id)
        assert container.status == "running"  # the rescuer's pass unpaused it
        assert [c.id for c in world.gateways(client, agent_id=w.agent_id)] == [container.id]
        endpoint = world.agent(db, w).endpoint
        assert endpoint is not None and endpoint == _published_endpoint(client, container.id)
        assert world.health(endpoint)["credentialFingerprint"] == world.fingerprint(
            env, revision_id
        )
    finally:
        sweep(client, w.namespace_id)
