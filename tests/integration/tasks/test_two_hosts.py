"""Two hosts' worth of processes on one PostgreSQL and one broker, as a user grows past one
box: each host runs a control worker and a driver worker, one beat serves both. Every deploy
runs once, the hosts share the fleet observer's cursor, and a killed gateway gets one repair.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import signal
from pathlib import Path

import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.state import models
from occ.state.db import Database
from tests.support import audits, processes, work_items, worker_worlds, worlds
from tests.support.processes import wait_for

AGENTS = 4


def _world(db: Database, env: dict[str, str], admin: str) -> list[worlds.World]:
    """``AGENTS`` local Agents in one ready Namespace."""
    return worker_worlds.ready(
        db,
        env,
        admin=admin,
        secret_value="sk-two-hosts",
        agent_names=[f"agent-{index}" for index in range(AGENTS)],
    )


def _runtime_status(db: Database, agent_id: str) -> str | None:
    with db.transaction() as session:
        return session.execute(
            sa.select(models.AgentRuntime.status).where(models.AgentRuntime.agent_id == agent_id)
        ).scalar_one_or_none()


def _work(db: Database, revision_id: str) -> list[tuple[str, str, int]]:
    """(kind, state, attempts) of every work item of the revision."""
    items = work_items.matching(db, models.ControllerWork.revision_id == revision_id)
    return [(item.kind, item.state, item.attempt_count) for item in items]


def _repairs(
    db: Database, revision_id: str
) -> list[tuple[str, int, dt.datetime, dt.datetime | None]]:
    """(state, attempts, admitted, completed) of the revision's repairs, in admission order."""
    work = models.ControllerWork
    repairs = work_items.matching(
        db, work.revision_id == revision_id, work.kind == "revision_maintenance"
    )
    return [(row.state, row.attempt_count, row.created_at, row.completed_at) for row in repairs]


def _activations(db: Database, revision_id: str) -> int:
    return audits.count(
        db,
        models.AuditEvent.resource_id == revision_id,
        models.AuditEvent.action == "agents.lifecycle.activate",
    )


def test_two_hosts_share_the_work_and_do_none_of_it_twice(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path, admin: str
) -> None:
    env.update(
        OCC_CLAIM_INTERVAL_MS="500",
        OCC_MAINTENANCE_INTERVAL_MS="1000",
        OCC_OBSERVER_TICK_MS="250",
    )
    for host in ("a", "b"):
        fleet.control_worker(f"control-{host}")
        fleet.worker(f"drivers-{host}", concurrency=2)
    fleet.beat()
    agents = _world(db, env, admin)

    revisions = [worlds.deploy(db, world) for world in agents]
    processes.nudge(env)
    wait_for(
        lambda: all(
            worlds.state_is(db, world, revision_id, "active")
            for world, revision_id in zip(agents, revisions, strict=True)
        ),
        timeout=60,
        message="every deploy to become active",
    )
    # one deploy item per revision, run once, and one activation audit each
    for revision_id in revisions:
        assert _work(db, revision_id) == [("revision_reconcile", "succeeded", 1)]
    wait_for(
        lambda: all(_runtime_status(db, world.agent_id) == "ready" for world in agents),
        timeout=30,
        message="the shared observer to record every Agent ready",
    )
    for revision_id in revisions:
        assert _activations(db, revision_id) == 1

    driver = LocalComputeDriver(local_root)
    victim, revision_id = agents[0], revisions[0]
    pid = driver.revision_process(victim.agent_id, revision_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(
        lambda: (
            (again := driver.revision_process(victim.agent_id, revision_id)) is not None
            and again != pid
            and _runtime_status(db, victim.agent_id) == "ready"
            and ("revision_maintenance", "succeeded", 1) in _work(db, revision_id)
        ),
        timeout=60,
        message="the killed gateway to be repaired",
    )
    # a repair whose gateway is not back within an interval ends degraded and the observer
    # admits the next one: never two at once, each run once
    repairs = _repairs(db, revision_id)
    assert all(state == "succeeded" and attempts == 1 for state, attempts, _, _ in repairs)
    assert all(
        earlier_done is not None and earlier_done <= later_admitted
        for (_, _, _, earlier_done), (_, _, later_admitted, _) in itertools.pairwise(repairs)
    )
    for other in revisions[1:]:
        assert _work(db, other) == [("revision_reconcile", "succeeded", 1)]
    assert [_activations(db, revision) for revision in revisions] == [1] * AGENTS
