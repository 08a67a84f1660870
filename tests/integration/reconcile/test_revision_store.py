"""The harness credential unsealed through the selected Secret Driver, in-process on real
PostgreSQL: a value kept in a tenant-local Kubernetes Secret (the fake API server) reaches the
runtime's credential file; a value gone from Kubernetes fails the deploy with
``HARNESS_CREDENTIAL_UNAVAILABLE`` before any Compute effect."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.secret import kubernetes
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, values
from occ.state.db import Database
from tests.integration.drivers.kubernetes import helpers
from tests.integration.reconcile import support
from tests.support import namespace_status, worlds
from tests.support.kube_api import FakeKubeAPI

VALUE = "sk-from-a-kubernetes-secret"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    with helpers.validating_cluster(tmp_path) as cluster:
        yield cluster


def _run_one(db: Database, worker: Worker, policy: values.QueuePolicy) -> str | None:
    [claim] = executor.claim_batch(db, policy, max_in_flight=5)
    executor.run(worker, claim.work_id, str(claim.token))
    with db.transaction() as session:
        return session.execute(
            sa.select(models.ControllerWork.reason_code).where(
                models.ControllerWork.id == claim.work_id
            )
        ).scalar_one()


def test_the_credential_is_unsealed_through_the_selected_secret_driver(
    db: Database,
    cluster: tuple[FakeKubeAPI, Settings],
    policy: values.QueuePolicy,
    tmp_path: Path,
) -> None:
    fake, settings = cluster
    admin = worlds.installation_admin(db, "secrets")
    namespace_id = namespace_status.created_ready(db, admin=admin)
    support.finish_all_work(db, "NAMESPACE_READY")  # the Namespace's own work is done
    spec = base.NamespaceSpec(id=namespace_id, name="team")
    kubernetes_namespace = helpers.tenant(settings, spec)
    store = kubernetes.KubernetesSecrets.from_settings(settings)
    [world] = worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver="local",
        store=store,
        secret_value=VALUE,
        document={},
    )
    driver = LocalComputeDriver(tmp_path / "local")
    worker = Worker(
        database=db,
        policy=policy,
        driver=driver,
        shutdown=threading.Event(),
        settings=Settings(),
        secrets=store,
    )
    try:
        fake.remove("secrets", kubernetes_namespace, kubernetes.object_name(world.secret_id))
        gone = worlds.deploy(db, world)
        assert _run_one(db, worker, policy) == "HARNESS_CREDENTIAL_UNAVAILABLE"
        assert not (tmp_path / "local" / "agents" / world.agent_id / "revisions" / gone).exists()

        store.seal(namespace_id, world.secret_id, VALUE)  # the value is back on Kubernetes
        revision_id = worlds.deploy(db, world)
        _run_one(db, worker, policy)
        revision = tmp_path / "local" / "agents" / world.agent_id / "revisions" / revision_id
        assert (revision / "credential").read_text() == VALUE
    finally:
        for pid in driver.gateway_processes():
            os.kill(pid, signal.SIGKILL)
        store.api.close()
