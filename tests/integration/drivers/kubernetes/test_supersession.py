"""A newer deploy wins against maintenance of the revision it replaces, through real workers and
beat against the fake API server.

Dedicated revisions share their Agent's volume, so a deploy stops the active revision before its
own gateway starts. While it waits for that stop, beat keeps seeding maintenance of the revision
that is still the active pointer; that maintenance must not start the old gateway again (it
did, scaling it back up on every interval, so the newer revision could wait forever).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from occ.drivers.compute.kubernetes import naming
from occ.foundation import harnesses
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.kubernetes import helpers
from tests.support import processes, worker_worlds, worlds
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

TIMEOUT = 40.0
MAINTENANCE_INTERVAL_MS = 1000


def _ended_maintenance(db: Database, revision_id: str, admitted: Any) -> list[str]:
    """The reason codes of the revision's maintenance items created after ``admitted`` that
    ended (succeeded or failed)."""
    work = models.ControllerWork
    with db.transaction() as session:
        return list(
            session.execute(
                sa.select(work.reason_code).where(
                    work.id.like(f"agent_revision:{revision_id}:maintenance:%"),
                    work.created_at > admitted,
                    work.state.in_(("succeeded", "failed_permanent")),
                )
            ).scalars()
        )


def _admitted_at(db: Database, revision_id: str) -> Any:
    with db.transaction() as session:
        return session.execute(
            sa.select(models.ControllerWork.created_at).where(
                models.ControllerWork.id == f"agent_revision:{revision_id}:reconcile"
            )
        ).scalar_one()


def test_maintenance_never_restarts_a_revision_that_a_newer_deploy_is_stopping(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    kube_api: FakeKubeAPI,
    kubeconfig: Path,
) -> None:
    admin = worlds.installation_admin(db, "agents")
    env.update(
        OCC_COMPUTE_DRIVER="kubernetes",
        OCC_KUBERNETES_KUBECONFIG=str(kubeconfig),
        OCC_KUBERNETES_GATEWAY_IMAGE=helpers.GATEWAY_IMAGE,
        OCC_CLAIM_INTERVAL_MS="300",
        OCC_UNREADY_RECHECK_MS="200",
        OCC_MAINTENANCE_INTERVAL_MS=str(MAINTENANCE_INTERVAL_MS),
    )
    fleet.control_worker()
    fleet.worker("drivers", concurrency=2)
    fleet.beat()
    world = worker_worlds.reconciled(
        db,
        env,
        admin=admin,
        compute_driver="kubernetes",
        secret_value=helpers.CREDENTIAL,
        document={"model": "m"},
        timeout=TIMEOUT,
        harness=harnesses.Harness.CODEX,
    )
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)

    first = worlds.deploy(db, world)
    processes.nudge(env)
    first_gateway = naming.dedicated_deployment(first)
    wait_for(
        lambda: kube_api.get("deployments", namespace, first_gateway) is not None,
        timeout=TIMEOUT,
        message="the first revision's gateway",
    )
    kube_api.mark_rollout(namespace, first_gateway)
    wait_for(
        lambda: worlds.state_is(db, world, first, "active"),
        timeout=TIMEOUT,
        message="the first revision to become active",
    )

    second = worlds.deploy(db, world)
    processes.nudge(env)

    def first_scaled_down() -> bool:
        gateway = kube_api.get("deployments", namespace, first_gateway)
        return gateway is not None and gateway["spec"]["replicas"] == 0

    wait_for(first_scaled_down, timeout=TIMEOUT, message="the second pass to stop the first")
    stopped_generation = kube_api.get("deployments", namespace, first_gateway)["metadata"][
        "generation"
    ]
    admitted = _admitted_at(db, second)

    # its Pods have not gone yet (the test plays the Deployment controller), so the second
    # revision waits; beat seeds the first's maintenance every interval meanwhile
    def touched_again() -> bool:
        gateway = kube_api.get("deployments", namespace, first_gateway)
        return gateway is None or gateway["metadata"]["generation"] != stopped_generation

    def three_passes_ended() -> bool:
        return len(_ended_maintenance(db, first, admitted)) >= 3

    wait_for(
        lambda: touched_again() or three_passes_ended(),
        timeout=TIMEOUT,
        message="three maintenance passes of the first revision while the second waits",
    )
    assert not touched_again(), "maintenance scaled the stopped revision back up"
    ended = _ended_maintenance(db, first, admitted)
    assert set(ended) == {"REVISION_MAINTENANCE_SUPERSEDED"}, ended
    assert kube_api.get("deployments", namespace, first_gateway)["spec"]["replicas"] == 0
    assert kube_api.get("deployments", namespace, naming.dedicated_deployment(second)) is None

    kube_api.mark_rollout(namespace, first_gateway)  # its Pods are gone now
    second_gateway = naming.dedicated_deployment(second)
    wait_for(
        lambda: kube_api.get("deployments", namespace, second_gateway) is not None,
        timeout=TIMEOUT,
        message="the second revision's gateway",
    )
    kube_api.mark_rollout(namespace, second_gateway)
    wait_for(
        lambda: worlds.state_is(db, world, second, "active"),
        timeout=TIMEOUT,
        message="the second revision to become active",
    )
