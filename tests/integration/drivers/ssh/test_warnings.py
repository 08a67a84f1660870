"""The ``ssh`` driver reports the startup warnings its gateway answers with at activation, and a
deploy through the worker (in this process, on PostgreSQL and a real OpenSSH server) keeps them
in its succeeded row and its deployment status."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from occ.drivers.compute import base
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.ssh.conftest import MakeDriver, namespace, revision
from tests.integration.reconcile import support
from tests.support import worlds
from tests.support.processes import wait_for

DOCUMENT: dict[str, object] = {
    "model": "m",
    "plugins": {"entries": {"memory": {}, "voice": {"enabled": False}}},
}
WARNINGS = [{"code": "PLUGIN_UNAVAILABLE", "detail": "memory"}]


@pytest.fixture
def worker(db: Database, make_driver: MakeDriver) -> Worker:
    return Worker(
        database=db,
        policy=support.POLICY,
        driver=make_driver(maintenance_interval_s=60.0),
        shutdown=threading.Event(),
        settings=Settings(database_url="postgresql://unused", unready_recheck_ms=50),
    )


def _deployed(
    db: Database, worker: Worker, operation: base.Operation, document: dict[str, object]
) -> tuple[worlds.World, str]:
    """An ``ssh`` Agent with ``document``, its Namespace on the host, deployed to the end."""
    world = support.ready_world(db, document, compute_driver="ssh")
    worker.driver.ensure_namespace(operation, base.NamespaceSpec(world.namespace_id, "team"))
    revision_id = worlds.deploy(db, world)
    support.run_until(db, worker, _work_id(revision_id), "REVISION_ACTIVATED")
    return world, revision_id


def _work_id(revision_id: str) -> str:
    return f"agent_revision:{revision_id}:reconcile"


def _result(db: Database, work_id: str) -> object:
    with db.transaction() as session:
        row = session.get(models.ControllerWork, work_id)
        assert row is not None
        return row.result_data


def test_an_activation_reports_the_warnings_the_gateway_started_with(
    make_driver: MakeDriver, operation: base.Operation
) -> None:
    driver = make_driver()
    ns = namespace()
    driver.ensure_namespace(operation, ns)
    plain = revision(ns.id)
    warned = dataclasses.replace(revision(ns.id), configuration_document=DOCUMENT)

    def activated(spec: base.RevisionSpec) -> base.Activation:
        assert isinstance(driver.prepare_revision(operation, spec), base.Ready)

        def attempt() -> base.Activation | None:
            answer = driver.activate_revision(operation, spec)
            return answer if isinstance(answer, base.Activation) else None

        return wait_for(attempt, timeout=20, message="the gateway to answer")

    assert activated(warned).warnings == (base.StartupWarning("PLUGIN_UNAVAILABLE", "memory"),)
    assert activated(plain).warnings == ()


def test_a_deploys_success_and_status_carry_the_gateways_warnings(
    db: Database, worker: Worker, operation: base.Operation
) -> None:
    world, revision_id = _deployed(db, worker, operation, DOCUMENT)

    assert _result(db, _work_id(revision_id)) == {"warnings": WARNINGS}
    status = worlds.deployment(db, world, revision_id)
    assert (status.state, status.error) == ("active", None)
    assert [dict(warning) for warning in status.warnings] == WARNINGS


def test_a_plain_deploy_has_no_warnings(
    db: Database, worker: Worker, operation: base.Operation
) -> None:
    world, revision_id = _deployed(db, worker, operation, {"model": "m"})

    assert _result(db, _work_id(revision_id)) is None
    assert worlds.deployment(db, world, revision_id).warnings == ()
