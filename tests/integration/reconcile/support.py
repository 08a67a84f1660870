"""Helpers of the reconcile tests that run work in-process: a ready world and its deploy, work
ended as if done, a worker on a ``local`` driver and its gateways killed at teardown, one item
run, work run until it ends, the ``worker.completed`` events logged for an item, and the
authorization denials audited for an item."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor, outcome
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, secret_store, values
from occ.state.db import Database
from occ.telemetry import observability
from tests.support import namespace_status, worlds
from tests.support.processes import wait_for

POLICY = values.QueuePolicy(
    lease_ms=15_000, dispatch_lease_ms=30_000, max_attempts=5, convergence_timeout_ms=900_000
)
"""The queue policy of the in-process workers."""


def ready_world(
    db: Database, document: dict[str, Any] | None = None, *, compute_driver: str = "local"
) -> worlds.World:
    """An Installation, a Namespace set ready (its own work item done) and one Agent in it on
    ``compute_driver``, as the administrator made them, its configuration ``document``
    (default empty)."""
    admin = worlds.installation_admin(db, "reconcile")
    namespace_id = namespace_status.created_ready(db, admin=admin)
    finish_all_work(db, "NAMESPACE_READY")
    [world] = worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver=compute_driver,
        store=secret_store.SecretStore.from_settings(Settings()),
        secret_value="v",
        document=document or {},
    )
    return world


def finish_all_work(db: Database, reason_code: str) -> None:
    """End every work item succeeded with ``reason_code``, as if its worker had done it."""
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork).values(
                state="succeeded", completed_at=sa.func.clock_timestamp(), reason_code=reason_code
            )
        )


def local_worker(
    db: Database,
    root: Path,
    *,
    interval_s: float = 60.0,
    policy: values.QueuePolicy = POLICY,
    unready_recheck_ms: int = 500,
) -> Worker:
    """A worker in this process on a ``local`` driver under ``root`` (observing every
    ``interval_s``, rechecking an unready runtime after ``unready_recheck_ms``);
    ``kill_gateways(root)`` ends what it started."""
    return Worker(
        database=db,
        policy=policy,
        driver=LocalComputeDriver(root, maintenance_interval_s=interval_s),
        shutdown=threading.Event(),
        settings=Settings(
            database_url="postgresql://unused", unready_recheck_ms=unready_recheck_ms
        ),
    )


def kill_gateways(root: Path) -> None:
    """Kill every gateway process the ``local`` driver under ``root`` started."""
    for runtime in root.glob("agents/*/revisions/*/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def run_until(
    db: Database,
    worker: Worker,
    work_id: str,
    *codes: str,
    ended: tuple[str, ...] = ("succeeded",),
) -> None:
    """Claim and run passes in-process, every queued item due at once, until ``work_id`` is in
    one of the ``ended`` states, with one of ``codes`` when any are given."""

    def finished() -> bool:
        with db.transaction() as session:
            row = session.get(models.ControllerWork, work_id)
            if row is not None and row.state in ended:
                assert not codes or row.reason_code in codes, row.reason_code
                return True
            session.execute(
                sa.update(models.ControllerWork)
                .where(models.ControllerWork.state == "queued")
                .values(available_at=sa.func.clock_timestamp())
            )
        for claim in executor.claim_batch(db, worker.policy, max_in_flight=10):
            executor.run(worker, claim.work_id, str(claim.token))
        return False

    wait_for(finished, timeout=60, interval=0.1, message=f"{work_id} to end {codes or ended}")


def run_the_one_item(
    db: Database, tmp_path: Path, policy: values.QueuePolicy
) -> tuple[LocalComputeDriver, values.Claim, outcome.PassResult | None]:
    """Claim the one queued item and run it in-process on a ``local`` driver under
    ``tmp_path``: the driver, the claim and the pass's result."""
    driver = LocalComputeDriver(tmp_path / "local")
    worker = Worker(
        database=db, policy=policy, driver=driver, shutdown=threading.Event(), settings=Settings()
    )
    [claim] = executor.claim_batch(db, policy, max_in_flight=5)
    return driver, claim, executor.run(worker, claim.work_id, str(claim.token))


def denials(db: Database, work_id: str) -> list[str]:
    """The actions of the authorization denials audited for ``work_id``."""
    with db.transaction() as session:
        return list(
            session.execute(
                sa.select(models.AuditEvent.action).where(
                    models.AuditEvent.kind == "authorization_denial",
                    models.AuditEvent.work_id == work_id,
                )
            ).scalars()
        )


def deploy(db: Database, world: worlds.World) -> tuple[str, str]:
    """Deploy the World's Agent: the revision's id and the id of its reconcile work item."""
    revision_id = worlds.deploy(db, world)
    return revision_id, f"agent_revision:{revision_id}:reconcile"


def completed_events(caplog: pytest.LogCaptureFixture, work_id: str) -> list[dict[str, object]]:
    """The ``worker.completed`` events ``caplog`` holds for ``work_id``, in order."""
    return [
        dict(event)
        for record in caplog.records
        if (event := getattr(record, observability.EVENT_ATTRIBUTE, None))
        and event["event"] == "worker.completed"
        and event.get("workId") == work_id
    ]
