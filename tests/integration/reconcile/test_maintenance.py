"""Maintenance passes, run in-process: an activated revision schedules its maintenance item in a
strictly later bucket, a maintenance pass re-observes the active revision and schedules the
next one, and a superseded revision ends its chain."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds
from tests.support.processes import wait_for

POLICY = values.QueuePolicy(
    lease_ms=15_000, dispatch_lease_ms=30_000, max_attempts=5, convergence_timeout_ms=900_000
)


@pytest.fixture
def worker(db: Database, tmp_path: Path) -> Iterator[Worker]:
    driver = LocalComputeDriver(tmp_path / "local", maintenance_interval_s=60.0)
    yield Worker(
        database=db,
        policy=POLICY,
        driver=driver,
        shutdown=threading.Event(),
        settings=Settings(database_url="postgresql://unused"),
    )
    for runtime in (tmp_path / "local").glob("agents/*/revisions/*/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _activate(db: Database, worker: Worker, world: worlds.World) -> str:
    """Deploy the Agent and run passes until its new revision is active; the revision's id."""
    revision_id = worlds.deploy(db, world)
    _run_until(db, worker, f"agent_revision:{revision_id}:reconcile", "REVISION_ACTIVATED")
    return revision_id


def _run_until(db: Database, worker: Worker, work_id: str, code: str) -> None:
    """Claim and run passes in-process until ``work_id`` ends with ``code``."""

    def finished() -> bool:
        with db.transaction() as session:
            row = session.get(models.ControllerWork, work_id)
            if row is not None and row.state == "succeeded":
                assert row.reason_code == code
                return True
            session.execute(
                sa.update(models.ControllerWork)
                .where(models.ControllerWork.state == "queued")
                .values(available_at=sa.func.clock_timestamp())
            )
        for claim in executor.claim_batch(db, POLICY, max_in_flight=10):
            executor.run(worker, claim.work_id, str(claim.token))
        return False

    wait_for(finished, timeout=30, interval=0.2, message=f"{work_id} to end {code}")


def _maintenance_items(db: Database, revision_id: str) -> list[models.ControllerWork]:
    with db.transaction() as session:
        return list(
            session.scalars(
                sa.select(models.ControllerWork)
                .where(models.ControllerWork.id.like(f"agent_revision:{revision_id}:maintenance:%"))
                .order_by(models.ControllerWork.id)
            )
        )


def test_maintenance_chain_follows_the_active_revision(db: Database, worker: Worker) -> None:
    world = support.ready_world(db)
    first = _activate(db, worker, world)

    [scheduled] = _maintenance_items(db, first)
    bucket = int(scheduled.id.rsplit(":", 1)[1])
    assert scheduled.state == "queued" and scheduled.available_at > scheduled.created_at
    _run_until(db, worker, scheduled.id, "REVISION_ALREADY_ACTIVE")
    items = _maintenance_items(db, first)
    assert [int(i.id.rsplit(":", 1)[1]) > bucket for i in items if i.state == "queued"] == [True]

    # a second revision, which supersedes the first: the first's chain ends without an effect
    # (its pending item runs while the second is admitted, or after it is active)
    _activate(db, worker, world)
    chain = _maintenance_items(db, first)
    assert [i.state for i in chain] == ["succeeded"] * len(chain)
    last = max(chain, key=lambda i: int(i.id.rsplit(":", 1)[1]))
    assert last.reason_code == "REVISION_MAINTENANCE_SUPERSEDED"
    assert worker.driver.revision_process(world.agent_id, first) is None  # type: ignore[attr-defined]


def _runtime(db: Database, agent_id: str) -> tuple[str, str] | None:
    with db.transaction() as session:
        row = session.execute(
            sa.select(models.AgentRuntime.status, models.AgentRuntime.reason_code).where(
                models.AgentRuntime.agent_id == agent_id
            )
        ).first()
    return None if row is None else (row.status, row.reason_code)


def _run_due_passes(db: Database, worker: Worker) -> list[str]:
    """Make every queued item due and run what one claim batch takes; the codes, in order."""
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork)
            .where(models.ControllerWork.state == "queued")
            .values(available_at=sa.func.clock_timestamp())
        )
    ran = []
    for claim in executor.claim_batch(db, POLICY, max_in_flight=10):
        result = executor.run(worker, claim.work_id, str(claim.token))
        if result is not None:
            ran.append(result.code)
    return ran


def test_a_killed_gateway_is_observed_degraded_restarted_and_ready_again(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    revision = _activate(db, worker, world)
    assert _runtime(db, world.agent_id) == ("ready", "REVISION_ACTIVATED")
    driver = worker.driver
    first_pid = driver.revision_process(world.agent_id, revision)  # type: ignore[attr-defined]
    assert first_pid is not None

    os.kill(first_pid, signal.SIGKILL)
    wait_for(
        lambda: driver.revision_process(world.agent_id, revision) is None,  # type: ignore[attr-defined]
        timeout=10,
        message="the gateway to be gone",
    )
    # the pass that finds it dead records it degraded and starts it again ...
    assert _run_due_passes(db, worker) == ["REVISION_INCOMPLETE"]
    assert _runtime(db, world.agent_id) == ("degraded", "REVISION_INCOMPLETE")
    # ... and a recheck of the same item finds it ready; the chain goes on in a later bucket
    wait_for(
        lambda: _run_due_passes(db, worker)[-1:] == ["REVISION_ALREADY_ACTIVE"],
        timeout=20,
        interval=0.1,
        message="the restarted gateway to be observed ready",
    )
    assert _runtime(db, world.agent_id) == ("ready", "REVISION_ALREADY_ACTIVE")
    second_pid = driver.revision_process(world.agent_id, revision)  # type: ignore[attr-defined]
    assert second_pid is not None and second_pid != first_pid
    assert [i.state for i in _maintenance_items(db, revision)].count("queued") == 1


def test_the_seed_observes_every_active_revision_once_per_bucket(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    revision = _activate(db, worker, world)
    before = {i.id for i in _maintenance_items(db, revision)}

    assert executor.observe_active_revisions(worker) == 1
    assert executor.observe_active_revisions(worker) == 1  # the same bucket: nothing new

    seeded = [i for i in _maintenance_items(db, revision) if i.id not in before]
    assert len(seeded) == 1 and seeded[0].state == "queued"
    assert seeded[0].available_at <= seeded[0].created_at  # due now, not an interval later


def test_a_newer_admitted_deploy_supersedes_the_active_revisions_maintenance(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    first = _activate(db, worker, world)
    [maintenance] = _maintenance_items(db, first)
    driver = worker.driver
    pid = driver.revision_process(world.agent_id, first)  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGKILL)
    wait_for(
        lambda: driver.revision_process(world.agent_id, first) is None,  # type: ignore[attr-defined]
        timeout=10,
        message="the gateway to be gone",
    )
    second = worlds.deploy(db, world)  # admitted; its pass has not run yet
    with db.transaction() as session:  # the maintenance item is the lane's head
        session.execute(
            sa.update(models.ControllerWork)
            .where(models.ControllerWork.id == maintenance.id)
            .values(available_at=sa.func.clock_timestamp() - sa.text("interval '1 hour'"))
        )

    [claim] = executor.claim_batch(db, POLICY, max_in_flight=10)
    result = executor.run(worker, claim.work_id, str(claim.token))

    assert claim.work_id == maintenance.id
    assert result is not None and result.code == "REVISION_MAINTENANCE_SUPERSEDED"
    # no repair of the older revision: its gateway stays gone while the newer deploy waits
    assert driver.revision_process(world.agent_id, first) is None  # type: ignore[attr-defined]
    assert [i.state for i in _maintenance_items(db, first)] == ["succeeded"]
    _run_until(db, worker, f"agent_revision:{second}:reconcile", "REVISION_ACTIVATED")
