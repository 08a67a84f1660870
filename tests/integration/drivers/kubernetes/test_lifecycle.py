"""The ``kubernetes`` driver through real Celery workers, PostgreSQL and Redis.

The fake API server runs in the test process; the workers reach it over HTTP through a
kubeconfig file, exactly as they would reach a cluster. The test plays the cluster's
controllers (rollouts, namespace termination). With ``OCC_TEST_KUBECONFIG`` naming a real
cluster the same lifecycle also runs there (where the cluster's controllers do that part).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import (
    agent_lifecycle,
    agents,
    configurations,
    deployments,
    namespaces,
    secrets,
)
from occ.drivers.compute.kubernetes import client, cluster_config, kinds, naming
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.kubernetes import fleets
from tests.support import processes, worlds
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

TIMEOUT = 40.0
KINDS = {
    "configmaps": kinds.CONFIG_MAP,
    "secrets": kinds.SECRET,
    "serviceaccounts": kinds.SERVICE_ACCOUNT,
    "services": kinds.SERVICE,
    "persistentvolumeclaims": kinds.CLAIM,
    "deployments": kinds.DEPLOYMENT,
}


class Cluster:
    """What the test reads from and does to the cluster the workers use."""

    def __init__(self, kubeconfig: Path, fake: FakeKubeAPI | None) -> None:
        self.kubeconfig = kubeconfig
        self.fake = fake
        self.api = client.KubernetesApi(
            cluster_config.load_configuration(str(kubeconfig), None), timeout_s=10
        )

    def get(self, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        kind = kinds.NAMESPACE if plural == "namespaces" else KINDS[plural]
        return self.api.read(kind, namespace, name)

    def objects(self, plural: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self.api.find(KINDS[plural], namespace, selector)

    def roll_out(self, namespace: str, deployment: str) -> None:
        if self.fake is not None:  # a real cluster's Deployment controller does this itself
            self.fake.mark_rollout(namespace, deployment)

    def finish_namespace_deletion(self, namespace: str) -> None:
        if self.fake is not None:
            self.fake.finish_namespace_deletion(namespace)


@pytest.fixture(params=["fake", "real"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    if request.param == "real":
        real = os.environ.get("OCC_TEST_KUBECONFIG")
        if not real:
            pytest.skip("OCC_TEST_KUBECONFIG names no real cluster")
        yield Cluster(Path(real), None)
        return
    with FakeKubeAPI(validate=True) as fake:
        yield Cluster(fake.write_kubeconfig(tmp_path / "kubeconfig"), fake)
        assert fake.validation_errors == []


World = worlds.World


def _deploy_until_active(
    db: Database, env: dict[str, str], cluster: Cluster, world: World, namespace: str
) -> str:
    revision_id = deployments.deploy_agent(
        db,
        world.admin,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent_id),
    ).deployment_id
    processes.nudge(env)
    gateway = naming.agent_object(world.agent_id)

    def template_runs_revision() -> bool:
        deployment = cluster.get("deployments", namespace, gateway)
        if deployment is None:
            return False
        annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
        return annotations.get(naming.REVISION_ANNOTATION) == revision_id

    wait_for(template_runs_revision, timeout=TIMEOUT, message="the gateway template to switch")
    # not ready: the pass deferred
    assert worlds.deployment(db, world, revision_id).state == "pending"
    cluster.roll_out(namespace, gateway)
    wait_for(
        lambda: worlds.deployment(db, world, revision_id).state == "active",
        timeout=TIMEOUT,
        message="the revision to become active",
    )
    return revision_id


def _tombstoned(db: Database, namespace_id: str) -> bool:
    with db.transaction() as session:
        deleted_at = session.execute(
            sa.select(models.Namespace.deleted_at).where(models.Namespace.id == namespace_id)
        ).scalar_one()
    return deleted_at is not None


def test_namespace_agent_deploy_redeploy_stop_delete_through_workers(
    db: Database, env: dict[str, str], fleet: processes.Fleet, cluster: Cluster
) -> None:
    world = fleets.reconciled(db, env, fleet, cluster.kubeconfig, installation="agents")
    admin = world.admin
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)
    assert cluster.get("namespaces", None, namespace) is not None

    first = _deploy_until_active(db, env, cluster, world, namespace)
    view = agents.get_agent(
        db, actor_id=admin, namespace_id=world.namespace_id, agent_id=world.agent_id
    )
    service = naming.agent_object(world.agent_id)
    assert view.endpoint == f"http://{service}.{namespace}.svc.cluster.local:8080"
    secret = cluster.get("secrets", namespace, naming.credential_secret(first))
    assert secret is not None and secret["type"] == "Opaque"

    second = _deploy_until_active(db, env, cluster, world, namespace)
    wait_for(
        lambda: cluster.get("configmaps", namespace, naming.configuration_map(first)) is None,
        timeout=TIMEOUT,
        message="the old revision's objects to go",
    )
    assert cluster.get("secrets", namespace, naming.credential_secret(first)) is None
    assert cluster.get("configmaps", namespace, naming.configuration_map(second)) is not None

    worlds.stop(db, world)
    processes.nudge(env)

    def stopped() -> bool:
        deployment = cluster.get("deployments", namespace, service)
        return deployment is not None and deployment["spec"]["replicas"] == 0

    wait_for(stopped, timeout=TIMEOUT, message="the gateway to scale to zero")
    assert cluster.get("configmaps", namespace, naming.configuration_map(second)) is not None
    assert cluster.get("persistentvolumeclaims", namespace, naming.state_claim(world.agent_id))

    _deploy_until_active(db, env, cluster, world, namespace)

    agent_lifecycle.delete_agent(
        db,
        admin,
        agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=world.agent_id),
    )
    processes.nudge(env)
    wait_for(
        lambda: worlds.agent_gone(db, world), timeout=TIMEOUT, message="the Agent to be deleted"
    )
    selector = f"{naming.AGENT_ID}={world.agent_id}"
    for plural in KINDS:
        assert cluster.objects(plural, namespace, selector) == [], plural

    configurations.delete_configuration(
        db,
        admin,
        configurations.DeleteConfiguration(
            namespace_id=world.namespace_id, configuration_id=world.configuration_id
        ),
    )
    secrets.delete_secret(
        db, admin, secrets.DeleteSecret(namespace_id=world.namespace_id, secret_id=world.secret_id)
    )
    namespaces.delete_namespace(
        db, admin, namespaces.DeleteNamespace(namespace_id=world.namespace_id)
    )
    processes.nudge(env)

    def terminating() -> bool:
        found = cluster.get("namespaces", None, namespace)
        return found is not None and found["metadata"].get("deletionTimestamp") is not None

    wait_for(terminating, timeout=TIMEOUT, message="the Kubernetes namespace to terminate")
    assert not _tombstoned(db, world.namespace_id)  # waits through Terminating
    cluster.finish_namespace_deletion(namespace)

    def namespace_deleted() -> bool:
        return _tombstoned(db, world.namespace_id)

    wait_for(namespace_deleted, timeout=TIMEOUT, message="the Namespace to be deleted")
    assert cluster.get("namespaces", None, namespace) is None
