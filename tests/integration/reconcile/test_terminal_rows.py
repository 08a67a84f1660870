"""A deployment's result on PostgreSQL and the ``local`` driver: the startup warnings its
gateway reported reach the succeeded row, its ``worker.completed`` and the deployment status;
and what runs after a row is terminal (repairs of the runtime, the observer, recovery, upkeep)
never rewrites it, nor any other terminal row."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor, observer, upkeep
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds
from tests.support.processes import wait_for

POLICY = values.QueuePolicy(lease_ms=15_000)
INTERVAL_S = 60.0
DOCUMENT = {"model": "m", "plugins": {"entries": {"memory": {}, "voice": {"enabled": False}}}}
WARNINGS = [{"code": "PLUGIN_UNAVAILABLE", "detail": "memory"}]


@pytest.fixture
def worker(db: Database, tmp_path: Path) -> Iterator[Worker]:
    root = tmp_path / "local"
    yield support.local_worker(
        db, root, interval_s=INTERVAL_S, policy=POLICY, unready_recheck_ms=50
    )
    support.kill_gateways(root)


def _run_until_done(db: Database, worker: Worker, work_id: str) -> str:
    """Claim and run passes in-process until ``work_id`` is terminal; its reason code."""

    def done() -> str | None:
        with db.transaction() as session:
            row = session.get(models.ControllerWork, work_id)
            if row is not None and row.state in ("succeeded", "failed_permanent"):
                return str(row.reason_code)
            session.execute(
                sa.update(models.ControllerWork)
                .where(models.ControllerWork.state == "queued")
                .values(available_at=sa.func.clock_timestamp())
            )
        for claim in executor.claim_batch(db, POLICY, max_in_flight=10):
            executor.run(worker, claim.work_id, str(claim.token))
        return None

    return wait_for(done, timeout=60, interval=0.1, message=f"{work_id} to end")


def _terminal_rows(db: Database) -> dict[str, str]:
    """Every terminal work row, whole, as PostgreSQL renders it (by id)."""
    with db.transaction() as session:
        rows = session.execute(
            sa.text(
                "SELECT id, to_jsonb(w)::text AS whole FROM occ.controller_work w"
                " WHERE state IN ('succeeded', 'failed_permanent')"
            )
        )
        return {row.id: row.whole for row in rows}


def _result(db: Database, work_id: str) -> object:
    with db.transaction() as session:
        row = session.get(models.ControllerWork, work_id)
        assert row is not None
        return row.result_data


def _kill_and_observe(db: Database, worker: Worker, agent_id: str, revision_id: str) -> str:
    """Kill the revision's gateway, let the observer admit a repair; the repair's work id."""
    driver = worker.driver
    assert isinstance(driver, LocalComputeDriver)
    pid = driver.revision_process(agent_id, revision_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: driver.revision_process(agent_id, revision_id) is None, timeout=10)
    with db.transaction() as session:  # one observation interval later
        session.execute(
            sa.update(models.ObserverCursor).values(
                observed_until=sa.func.clock_timestamp() - sa.text("interval '60 seconds'")
            )
        )
        session.execute(sa.update(models.AgentRuntime).values(repair_after=None))
    assert executor.observe(worker).verdicts == {observer.Verdict.REPAIR: 1}
    with db.transaction() as session:
        return str(
            session.execute(
                sa.select(models.ControllerWork.id).where(models.ControllerWork.state == "queued")
            ).scalar_one()
        )


def test_the_warnings_a_gateway_reported_reach_the_result_the_event_and_the_status(
    db: Database, worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    world = support.ready_world(db, DOCUMENT)
    revision_id, work_id = support.deploy(db, world)

    with caplog.at_level(logging.INFO, logger="occ"):
        assert _run_until_done(db, worker, work_id) == "REVISION_ACTIVATED"

    assert _result(db, work_id) == {"warnings": WARNINGS}
    assert support.completed_events(caplog, work_id)[-1]["warnings"] == WARNINGS
    status = worlds.deployment(db, world, revision_id)
    assert status.state == "active" and status.error is None
    assert [dict(warning) for warning in status.warnings] == WARNINGS


def test_a_deploy_whose_gateway_reports_nothing_has_no_warnings(
    db: Database, worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    world = support.ready_world(db)
    revision_id, work_id = support.deploy(db, world)
    with caplog.at_level(logging.INFO, logger="occ"):
        _run_until_done(db, worker, work_id)

    assert _result(db, work_id) is None
    assert support.completed_events(caplog, work_id)[-1]["warnings"] == []
    assert worlds.deployment(db, world, revision_id).warnings == ()


def test_repairs_recovery_and_upkeep_never_rewrite_a_terminal_row(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db, DOCUMENT)
    revision_id = worlds.deploy(db, world)
    _run_until_done(db, worker, f"agent_revision:{revision_id}:reconcile")
    first_repair = _kill_and_observe(db, worker, world.agent_id, revision_id)
    assert _run_until_done(db, worker, first_repair) == "REVISION_ALREADY_ACTIVE"
    terminal = _terminal_rows(db)
    assert len(terminal) >= 3  # the Namespace's, the deployment's, the first repair's

    second_repair = _kill_and_observe(db, worker, world.agent_id, revision_id)
    assert _run_until_done(db, worker, second_repair) == "REVISION_ALREADY_ACTIVE"
    executor.recover(db, POLICY)
    upkeep.prune(db, upkeep.Retention.of(Settings(database_url="postgresql://unused")))

    after = _terminal_rows(db)
    assert {work_id: after.get(work_id) for work_id in terminal} == terminal
    assert set(after) - set(terminal) == {second_repair}
    assert [dict(w) for w in worlds.deployment(db, world, revision_id).warnings] == WARNINGS
