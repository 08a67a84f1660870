"""A newer deploy wins against maintenance of the revision it replaces, through real workers and
beat against the fake API server.

Dedicated revisions share their Agent's volume, so a deploy stops the active revision before its
own gateway starts. While it waits for that stop, the fleet observer keeps observing the
revision that is still the active pointer, and finds it gone; neither the observer nor a repair
may start the old gateway again (maintenance did, scaling it back up on every interval, so the
newer revision could wait forever).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from occ.drivers.compute.kubernetes import naming
from occ.foundation import harnesses
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.kubernetes.conftest import Reconcile
from tests.support import processes, worker_worlds, worlds
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

TIMEOUT = 40.0
MAINTENANCE_INTERVAL_MS = 1000


def _repairs_since(db: Database, revision_id: str, admitted: Any) -> list[str | None]:
    """The reason codes of the revision's repairs admitted after ``admitted``."""
    work = models.ControllerWork
    with db.transaction() as session:
        return list(
            session.execute(
                sa.select(work.reason_code).where(
                    work.id.like(f"agent_revision:{revision_id}:maintenance:%"),
                    work.created_at > admitted,
                )
            ).scalars()
        )


def _observed_until(db: Database) -> Any:
    with db.transaction() as session:
        return session.execute(
            sa.select(models.ObserverCursor.observed_until).where(
                models.ObserverCursor.compute_driver == "kubernetes"
            )
        ).scalar_one_or_none()


def _admitted_at(db: Database, revision_id: str) -> Any:
    with db.transaction() as session:
        return session.execute(
            sa.select(models.ControllerWork.created_at).where(
                models.ControllerWork.id == f"agent_revision:{revision_id}:reconcile"
            )
        ).scalar_one()


def _rolled_out(
    db: Database, kube_api: FakeKubeAPI, world: worlds.World, revision_id: str, what: str
) -> str:
    """Wait for the revision's gateway, play its finished rollout (the test is the Deployment
    controller) and wait for the revision to become active; the gateway's name."""
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)
    gateway = naming.dedicated_deployment(revision_id)
    wait_for(
        lambda: kube_api.get("deployments", namespace, gateway) is not None,
        timeout=TIMEOUT,
        message=f"{what}'s gateway",
    )
    kube_api.mark_rollout(namespace, gateway)
    worker_worlds.wait_state(db, world, revision_id, "active", what, timeout=TIMEOUT)
    return gateway


def test_maintenance_never_restarts_a_revision_that_a_newer_deploy_is_stopping(
    db: Database, env: dict[str, str], kube_api: FakeKubeAPI, reconcile: Reconcile
) -> None:
    world = reconcile(
        installation="agents",
        harness=harnesses.Harness.CODEX,
        OCC_CLAIM_INTERVAL_MS="300",
        OCC_MAINTENANCE_INTERVAL_MS=str(MAINTENANCE_INTERVAL_MS),
        OCC_OBSERVER_TICK_MS="200",
    )
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)

    first = worlds.deploy(db, world)
    processes.nudge(env)
    first_gateway = _rolled_out(db, kube_api, world, first, "the first revision")

    second = worlds.deploy(db, world)
    processes.nudge(env)

    def first_scaled_down() -> bool:
        gateway = kube_api.get("deployments", namespace, first_gateway)
        return gateway is not None and gateway["spec"]["replicas"] == 0

    wait_for(first_scaled_down, timeout=TIMEOUT, message="the second pass to stop the first")
    stopped_generation = kube_api.existing("deployments", namespace, first_gateway)["metadata"][
        "generation"
    ]
    admitted = _admitted_at(db, second)

    # its Pods have not gone yet (the test plays the Deployment controller), so the second
    # revision waits; the observer observes the first, gone, every interval meanwhile
    def touched_again() -> bool:
        gateway = kube_api.get("deployments", namespace, first_gateway)
        return gateway is None or gateway["metadata"]["generation"] != stopped_generation

    def observed_twice_since() -> bool:
        until = _observed_until(db)
        return until is not None and until > admitted + dt.timedelta(
            milliseconds=3 * MAINTENANCE_INTERVAL_MS
        )

    wait_for(
        lambda: touched_again() or observed_twice_since(),
        timeout=TIMEOUT,
        message="the fleet to be observed over two intervals while the second waits",
    )
    assert not touched_again(), "the stopped revision was scaled back up"
    assert _repairs_since(db, first, admitted) == []  # left to the newer deploy
    assert kube_api.existing("deployments", namespace, first_gateway)["spec"]["replicas"] == 0
    assert kube_api.get("deployments", namespace, naming.dedicated_deployment(second)) is None

    kube_api.mark_rollout(namespace, first_gateway)  # its Pods are gone now
    _rolled_out(db, kube_api, world, second, "the second revision")
