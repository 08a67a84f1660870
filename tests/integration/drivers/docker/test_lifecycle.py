"""The whole lifecycle on the ``docker`` driver through real Celery workers, PostgreSQL, Redis and
the Docker Engine: Namespace, deploy, redeploy, stop, deploy again, Agent and Namespace
deletion, and a gateway that never becomes healthy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from occ.controller import agent_lifecycle, configurations, installation, namespaces, secrets
from occ.drivers.compute.docker import naming
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.docker import world
from tests.integration.drivers.docker.objects import owned_objects, sweep
from tests.support import processes, worker_worlds, worlds
from tests.support.processes import wait_for

pytestmark = pytest.mark.usefixtures("control")


@pytest.fixture
def docker_env(env: dict[str, str], docker_host: str) -> dict[str, str]:
    env.update(OCC_COMPUTE_DRIVER="docker", OCC_DOCKER_HOST=docker_host)
    return env


@pytest.fixture
def control(fleet: processes.Fleet, docker_env: dict[str, str], db: Database) -> processes.Process:
    installation.bootstrap_installation(db, name="docker", admin_name="admin")
    return fleet.control_worker()


@pytest.fixture
def swept(client: Any) -> Iterator[list[str]]:
    """Namespace ids whose engine objects are removed after the test, whatever happened."""
    namespace_ids: list[str] = []
    yield namespace_ids
    for namespace_id in namespace_ids:
        sweep(client, namespace_id)


def test_namespace_deploy_redeploy_stop_deploy_delete_on_docker(
    db: Database, docker_env: dict[str, str], fleet: processes.Fleet, client: Any, swept: list[str]
) -> None:
    fleet.worker("drivers", concurrency=2)
    w = world.make(db, docker_env)
    swept.append(w.namespace_id)
    [network] = client.networks.list(names=[naming.network(w.namespace_id)])
    assert network.attrs["Labels"] == naming.owned(w.namespace_id)

    first = world.deploy(db, w)
    world.send_nudge(docker_env)
    worker_worlds.wait_state(db, w, first, "active", "the first revision", timeout=60)
    endpoint = world.agent(db, w).endpoint
    assert endpoint is not None and endpoint.startswith("http://127.0.0.1:")
    health = world.health(endpoint)
    assert (health["revisionId"], health["credentialFingerprint"]) == (
        first,
        world.fingerprint(docker_env, first),
    )
    [container] = world.gateways(client, revision_id=first)
    inspected = json.dumps(client.api.inspect_container(container.id))
    assert world.SECRET_VALUE not in inspected + client.api.logs(container.id).decode()
    wait_for(
        lambda: (
            client.api.inspect_container(container.id)["State"]["Health"]["Status"] == "healthy"
        ),
        timeout=30,
        message="the engine to report the gateway healthy",
    )

    second = world.deploy(db, w)
    world.send_nudge(docker_env)
    worker_worlds.wait_state(db, w, second, "active", "the second revision", timeout=60)
    endpoint = world.agent(db, w).endpoint
    assert endpoint is not None and world.health(endpoint)["revisionId"] == second
    wait_for(
        lambda: world.gateways(client, revision_id=first) == [],
        timeout=30,
        message="the old gateway to be removed",
    )
    assert world.deployment(db, w, first).state == "superseded"

    worlds.stop(db, w)
    world.send_nudge(docker_env)
    wait_for(lambda: world.agent(db, w).active_revision_id is None, timeout=60, message="stopped")
    [stopped] = world.gateways(client, revision_id=second)
    assert stopped.status == "exited"
    assert world.agent(db, w).endpoint is None

    third = world.deploy(db, w)
    world.send_nudge(docker_env)
    worker_worlds.wait_state(db, w, third, "active", "the third revision", timeout=60)
    endpoint = world.agent(db, w).endpoint
    assert endpoint is not None and world.health(endpoint)["revisionId"] == third

    agent_lifecycle.delete_agent(
        db, w.admin, agent_lifecycle.DeleteAgent(namespace_id=w.namespace_id, agent_id=w.agent_id)
    )
    world.send_nudge(docker_env)
    wait_for(lambda: world.agent_gone(db, w), timeout=60, message="the Agent to be deleted")
    assert world.gateways(client, agent_id=w.agent_id) == []
    assert owned_objects(client, w.namespace_id) == {
        "containers": [],
        "volumes": [],
        "networks": [naming.network(w.namespace_id)],
    }

    configurations.delete_configuration(
        db,
        w.admin,
        configurations.DeleteConfiguration(
            namespace_id=w.namespace_id, configuration_id=w.configuration_id
        ),
    )
    secrets.delete_secret(
        db, w.admin, secrets.DeleteSecret(namespace_id=w.namespace_id, secret_id=w.secret_id)
    )
    namespaces.delete_namespace(
        db, w.admin, namespaces.DeleteNamespace(namespace_id=w.namespace_id)
    )
    world.send_nudge(docker_env)
    wait_for(
        lambda: world.namespace_status(db, w.namespace_id) == "deleted",
        timeout=60,
        message="the Namespace to be deleted",
    )
    assert owned_objects(client, w.namespace_id) == {
        "containers": [],
        "volumes": [],
        "networks": [],
    }
    for process in fleet.processes:
        assert world.SECRET_VALUE not in process.text()


def test_a_gateway_that_never_becomes_healthy_fails_at_the_deadline_and_is_retired(
    db: Database, docker_env: dict[str, str], fleet: processes.Fleet, client: Any, swept: list[str]
) -> None:
    docker_env["OCC_WORKER_CONVERGENCE_TIMEOUT_MS"] = "10000"
    docker_env["OCC_WORKER_MAX_ATTEMPTS"] = "2"
    fleet.worker("drivers")
    fleet.beat()
    w = world.make(db, docker_env, document={"standIn": {"healthy": False}})
    swept.append(w.namespace_id)
    revision_id = world.deploy(db, w)
    world.send_nudge(docker_env)
    # the deployment fails at its deadline
    worker_worlds.wait_state(db, w, revision_id, "failed", timeout=60)
    view = world.deployment(db, w, revision_id)
    assert view.reason_code == "CONVERGENCE_DEADLINE_EXCEEDED"
    work_id = f"agent_revision:{revision_id}:reconcile"
    with db.transaction() as session:
        row = session.get(models.ControllerWork, work_id)
        assert row is not None
        assert row.attempt_count <= 1  # unready passes are deferrals: no attempt spent
    assert world.reconcile_passes(db, work_id) >= 2
    # it ran all along, answering 503; failed for good, its runtime is retired
    wait_for(
        lambda: not world.gateways(client, revision_id=revision_id),
        timeout=60,
        message="the failed revision's gateway to be retired",
    )
