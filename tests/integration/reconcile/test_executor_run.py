"""``executor.run``'s lean path keeps its fencing: a redelivered message, a stale worker's
publication and a failing reload, each on a real PostgreSQL with the local driver."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import prometheus_client
import pytest
import sqlalchemy as sa

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor, namespace
from occ.settings.config import Settings
from occ.state import models, values, work_queue
from occ.state.db import Database
from occ.telemetry import observability
from tests.integration.reconcile import support
from tests.integration.reconcile.test_executor import (
    _admit_namespace,
    _expire,
    _namespace_and_audits,
)
from tests.support import fake_driver, work_items, worlds


def _worker(db: Database, driver: base.ComputeDriver) -> executor.Worker:
    return executor.Worker(
        database=db,
        policy=values.QueuePolicy(),
        driver=driver,
        shutdown=threading.Event(),
        settings=Settings(),
    )


def _work_row(db: Database, work_id: str) -> tuple[object, ...]:
    [item] = work_items.matching(db, models.ControllerWork.id == work_id)
    return (
        item.state,
        item.reason_code,
        item.attempt_count,
        item.last_progress_code,
        item.updated_at,
    )


def test_a_redelivered_run_work_after_the_item_ran_has_no_effect(
    db: Database, tmp_path: Path
) -> None:
    namespace_id = _admit_namespace(db)
    driver = LocalComputeDriver(tmp_path / "local")
    worker = _worker(db, driver)
    [dispatch] = executor.claim_batch(db, worker.policy, max_in_flight=5)

    first = executor.run(worker, dispatch.work_id, str(dispatch.token))
    assert first is not None and first.code == "NAMESPACE_READY"
    after_first = (_namespace_and_audits(db, namespace_id), _work_row(db, dispatch.work_id))

    again = executor.run(worker, dispatch.work_id, str(dispatch.token))

    assert again is None
    assert (_namespace_and_audits(db, namespace_id), _work_row(db, dispatch.work_id)) == after_first
    assert [e["op"] for e in driver.effects() if e["phase"] == "started"] == ["ensure_namespace"]


class _OvertakenDriver(LocalComputeDriver):
    """Its ensure lets the lease run out and another worker recover, claim and start the item."""

    def __init__(self, root: Path, db: Database, owner_db: Database) -> None:
        super().__init__(root)
        self.db, self.owner_db = db, owner_db
        self.successor: values.Claim | None = None

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        _expire(self.owner_db)
        executor.recover(self.db, values.QueuePolicy())
        with self.owner_db.transaction() as session:  # skip the backoff
            session.execute(sa.text("UPDATE occ.controller_work SET available_at = now()"))
        [dispatch] = executor.claim_batch(self.db, values.QueuePolicy(), max_in_flight=5)
        with self.db.transaction() as session:
            self.successor = work_queue.start(session, values.QueuePolicy(), dispatch)
        return base.Ready()


def test_a_stale_workers_publication_is_refused(
    db: Database, owner_db: Database, tmp_path: Path
) -> None:
    namespace_id = _admit_namespace(db)
    driver = _OvertakenDriver(tmp_path / "local", db, owner_db)
    worker = _worker(db, driver)
    [dispatch] = executor.claim_batch(db, worker.policy, max_in_flight=5)

    assert executor.run(worker, dispatch.work_id, str(dispatch.token)) is None

    status, audits = _namespace_and_audits(db, namespace_id)
    assert status == "provisioning"  # the stale pass published nothing
    assert ("namespaces.lifecycle.ensure", "success") not in audits
    state, reason, attempts, progress, _ = _work_row(db, dispatch.work_id)
    assert (state, reason, attempts, progress) == ("claimed", None, 2, "LEASE_EXPIRED")
    assert driver.successor is not None and driver.successor.running


def test_a_bug_in_a_pass_is_logged_with_its_traceback_counted_and_retried(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _admit_namespace(db)
    driver = LocalComputeDriver(tmp_path / "local")
    worker = _worker(db, driver)

    def broken(*_: object) -> object:
        raise RuntimeError("a bug in the reload")

    monkeypatch.setattr(namespace, "prepare", broken)
    [dispatch] = executor.claim_batch(db, worker.policy, max_in_flight=5)
    bugs = {"work_kind": "namespace"}
    before = prometheus_client.REGISTRY.get_sample_value("occ_reconciler_errors_total", bugs) or 0

    with caplog.at_level(logging.ERROR, logger="occ"):
        result = executor.run(worker, dispatch.work_id, str(dispatch.token))

    assert result is not None and result.code == "RECONCILER_ERROR"
    state, reason, attempts, progress, _ = _work_row(db, dispatch.work_id)
    assert (state, reason, attempts, progress) == ("queued", None, 1, "RECONCILER_ERROR")
    assert driver.effects() == []
    [record] = [r for r in caplog.records if r.exc_info is not None]
    line = json.loads(observability.JsonFormatter("occ-worker").format(record))
    assert (line["event"], line["code"], line["workId"]) == (
        "worker.error",
        "RECONCILER_ERROR",
        dispatch.work_id,
    )
    assert "RuntimeError: a bug in the reload" in line["traceback"]
    assert prometheus_client.REGISTRY.get_sample_value("occ_reconciler_errors_total", bugs) == (
        before + 1
    )


def _deploys_measured() -> float:
    labels = {"operation": "deploy"}
    name = "occ_agent_operation_duration_seconds_count"
    return prometheus_client.REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_deploy_ending_already_active_is_measured_like_an_activation(db: Database) -> None:
    """A pass that moved the pointer and waited for the rollout, then found the revision active
    on the next pass (most deploys on Kubernetes), ends ``REVISION_ALREADY_ACTIVE``: a
    successful deploy, observed in the deploy-duration metric."""
    world = support.ready_world(db)
    revision_id = worlds.deploy(db, world)
    driver = fake_driver.FakeComputeDriver(name="local")
    driver.script("activate_revision", base.Pending("ROLLOUT_IN_PROGRESS"))
    worker = _worker(db, driver)
    before = _deploys_measured()

    [first] = executor.claim_batch(db, worker.policy, max_in_flight=5)
    waited = executor.run(worker, first.work_id, str(first.token))
    assert waited is not None and waited.code == "REVISION_INCOMPLETE"
    assert _deploys_measured() == before
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork)
            .where(models.ControllerWork.id == first.work_id)
            .values(available_at=sa.func.clock_timestamp())
        )
    [second] = executor.claim_batch(db, worker.policy, max_in_flight=5)
    done = executor.run(worker, second.work_id, str(second.token))

    assert done is not None and done.code == "REVISION_ALREADY_ACTIVE"
    assert second.work_id == f"agent_revision:{revision_id}:reconcile"
    assert _deploys_measured() == before + 1
