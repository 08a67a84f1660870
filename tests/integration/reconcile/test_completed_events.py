"""``worker.completed`` of revision work on PostgreSQL and the ``local`` driver: a deploy's passes
carry the deployment's timing (its passes so far, time since admission, time waiting for
readiness, this pass's prepare and activation), a pass that does not finish carries its cause,
and stop work carries no deployment timing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.reconcile.environment import Worker
from occ.state import models, values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds

POLICY = values.QueuePolicy(lease_ms=15_000)
TIMING = ("durationMs", "deployPasses", "prepareMs", "readinessWaitMs", "activationMs", "elapsedMs")


@pytest.fixture
def worker(db: Database, tmp_path: Path) -> Iterator[Worker]:
    root = tmp_path / "local"
    yield support.local_worker(db, root, interval_s=3600.0, policy=POLICY, unready_recheck_ms=50)
    support.kill_gateways(root)


def test_a_deploys_passes_carry_its_timing_and_the_unfinished_ones_their_cause(
    db: Database, worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    world = support.ready_world(db)
    _, work_id = support.deploy(db, world)
    with caplog.at_level(logging.INFO, logger="occ"):
        support.run_until(db, worker, work_id, ended=("succeeded", "failed_permanent"))

    passes = support.completed_events(caplog, work_id)
    assert passes and passes[-1]["code"] == "REVISION_ACTIVATED"
    for number, event in enumerate(passes, start=1):
        assert all(isinstance(event[name], int | float) for name in TIMING), event
        assert event["deployPasses"] == number  # each pass's evidence counted, its own included
        assert float(str(event["elapsedMs"])) >= float(str(event["durationMs"])) - 50
    last = passes[-1]
    assert "cause" not in last and float(str(last["activationMs"])) > 0
    unfinished = passes[:-1]
    for event in unfinished:  # the gateway was still starting: the driver said so
        assert event["outcome"] == "pending" and event["code"] == "REVISION_INCOMPLETE"
        assert isinstance(event["cause"], str) and event["dependency"] == "compute"
    if unfinished:
        assert float(str(last["readinessWaitMs"])) > 0
    else:
        assert last["readinessWaitMs"] == 0


def test_stop_work_carries_no_deployment_timing(
    db: Database, worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    world = support.ready_world(db)
    support.run_until(
        db,
        worker,
        f"agent_revision:{worlds.deploy(db, world)}:reconcile",
        ended=("succeeded", "failed_permanent"),
    )
    worlds.stop(db, world)
    with db.transaction() as session:
        [work_id] = session.execute(
            sa.select(models.ControllerWork.id).where(models.ControllerWork.kind == "agent_stopped")
        ).scalars()
    with caplog.at_level(logging.INFO, logger="occ"):
        support.run_until(db, worker, work_id, ended=("succeeded", "failed_permanent"))

    [stopped] = support.completed_events(caplog, work_id)
    assert stopped["code"] == "AGENT_STOPPED"
    assert not set(TIMING[1:]) & set(stopped) and "durationMs" in stopped
