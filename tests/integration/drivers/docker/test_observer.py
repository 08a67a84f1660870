"""The fleet observer on the ``docker`` driver (a worker in this process, PostgreSQL, a real
engine): a gateway on its way back (its health check not passed since an unpause) is left
alone, while one whose health check fails is repaired."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.drivers.compute import base
from occ.drivers.compute.docker import health, naming
from occ.reconcile import executor, observer
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.docker.objects import make_driver, sweep
from tests.integration.reconcile import support
from tests.support import worlds
from tests.support.processes import wait_for

CHECK = health.HealthCheck(interval_s=6.0, timeout_s=1.0, retries=1, start_period_s=0.0)
"""A probe every 6 s: a wide window between an unpause and the next probe."""


@pytest.fixture
def deployed(
    db: Database, docker_host: str, client: Any, operation: base.Operation
) -> Iterator[tuple[Worker, Any]]:
    """A worker observing every 60 s, and the gateway container of one deployed Agent."""
    driver = make_driver(docker_host, maintenance_interval_s=60.0, health_check=CHECK)
    worker = Worker(
        database=db,
        policy=support.POLICY,
        driver=driver,
        shutdown=threading.Event(),
        settings=Settings(database_url="postgresql://unused", unready_recheck_ms=50),
    )
    world = support.ready_world(db, compute_driver="docker")
    try:
        driver.ensure_namespace(operation, base.NamespaceSpec(world.namespace_id, "team"))
        revision_id = worlds.deploy(db, world)
        support.run_until(
            db, worker, f"agent_revision:{revision_id}:reconcile", "REVISION_ACTIVATED"
        )
        yield worker, client.containers.get(naming.gateway(revision_id))
    finally:
        sweep(client, world.namespace_id)


def _observe(db: Database, worker: Worker) -> dict[observer.Verdict, int]:
    """One observer tick over every running Agent (all due: the cursor one interval back)."""
    with db.transaction() as session:
        session.execute(
            sa.update(models.ObserverCursor).values(
                observed_until=sa.func.clock_timestamp() - sa.text("interval '60 seconds'")
            )
        )
    return executor.observe(worker).verdicts


def _repairs(db: Database) -> int:
    with db.transaction() as session:
        return int(
            session.execute(
                sa.select(sa.func.count()).where(
                    models.ControllerWork.id.like("agent_revision:%:maintenance:%")
                )
            ).scalar_one()
        )


def _gateway_pid(init_pid: int) -> int:
    """The gateway's process: the one child of the container's init (``docker-init``)."""
    (child,) = (
        int(status.parent.name)
        for status in Path("/proc").glob("[0-9]*/status")
        if f"PPid:\t{init_pid}\n" in _read(status)
    )
    return child


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # a process that ended meanwhile
        return ""


def _health(client: Any, container: Any) -> tuple[str, int]:
    found = client.api.inspect_container(container.id)["State"]["Health"]
    return str(found["Status"]), int(found["FailingStreak"])


def test_a_gateway_on_its_way_back_is_not_repaired(
    db: Database, deployed: tuple[Worker, Any], client: Any
) -> None:
    worker, container = deployed
    assert _observe(db, worker) == {observer.Verdict.UNCHANGED: 1}  # ready since its deploy
    container.pause()
    container.unpause()

    verdicts = _observe(db, worker)

    # the engine says unhealthy until its next probe, though no probe failed: still so now
    assert _health(client, container) == ("unhealthy", 0)
    assert verdicts == {observer.Verdict.STARTING: 1}
    assert _repairs(db) == 0
    wait_for(lambda: _health(client, container)[0] == "healthy", timeout=30)
    assert _observe(db, worker) == {observer.Verdict.UNCHANGED: 1}


def test_a_gateway_whose_health_check_fails_is_repaired(
    db: Database, deployed: tuple[Worker, Any], client: Any
) -> None:
    worker, container = deployed
    pid = _gateway_pid(int(client.api.inspect_container(container.id)["State"]["Pid"]))
    os.kill(pid, signal.SIGSTOP)  # it runs, but answers no probe
    try:
        wait_for(
            lambda: _health(client, container) == ("unhealthy", 1),
            timeout=30,
            message="the engine's probe to fail",
        )

        assert _observe(db, worker) == {observer.Verdict.REPAIR: 1}
        assert _repairs(db) == 1
    finally:
        os.kill(pid, signal.SIGCONT)
