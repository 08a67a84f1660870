"""Agent reconciliation for real: Celery workers, PostgreSQL, Redis and local gateway processes.

Deploy, redeploy, racing deploys, revoked permissions, stop, delete, a gateway that never
becomes healthy, and a worker killed during activation.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import (
    agent_lifecycle,
    installation,
)
from occ.drivers.compute.local import LocalComputeDriver
from occ.state import models
from occ.state.db import Database
from tests.support import audits, gateways, processes, worker_worlds, worlds
from tests.support.processes import wait_for

World = worlds.World

pytestmark = pytest.mark.usefixtures("control", "cleanup_gateways")


@pytest.fixture
def installed(db: Database) -> None:
    """Workers refuse to start before bootstrap."""
    installation.bootstrap_installation(db, name="agents", admin_name="admin")


@pytest.fixture
def control(fleet: processes.Fleet, installed: None) -> processes.Process:
    return fleet.control_worker()


def _make_world(
    db: Database, env: dict[str, str], *, document: dict[str, Any] | None = None
) -> World:
    admin = worlds.installation_admin(db, "agents")
    # Namespace reconciliation is shown elsewhere
    [world] = worker_worlds.ready(
        db, env, admin=admin, secret_value="sk-never-logged", document=document
    )
    return world


def _deploy_until_active(db: Database, env: dict[str, str], world: World, what: str) -> str:
    """Deploy, nudge the workers and wait for the revision to become active; its id."""
    revision_id = worlds.deploy(db, world)
    processes.nudge(env)
    worker_worlds.wait_state(db, world, revision_id, "active", what)
    return revision_id


def _expose_metrics(env: dict[str, str], tmp_path: Path) -> int:
    """Have the workers serve their (multiprocess) metrics on a free port; the port."""
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    port = _free_port()
    env.update(OCC_METRICS_PORT=str(port), PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    return port


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text(encoding="utf-8")


def _activation_audits(db: Database, revision_id: str) -> int:
    return audits.count(
        db,
        models.AuditEvent.resource_id == revision_id,
        models.AuditEvent.action == "agents.lifecycle.activate",
    )


def _retire_audits(db: Database, revision_id: str) -> list[dict[str, Any]]:
    """The details of the revision's ``agents.lifecycle.retire`` events, oldest first."""
    with db.transaction() as session:
        rows = session.execute(
            sa.select(models.AuditEvent.details)
            .where(
                models.AuditEvent.resource_id == revision_id,
                models.AuditEvent.action == "agents.lifecycle.retire",
            )
            .order_by(models.AuditEvent.sequence)
        ).scalars()
        return [dict(row) for row in rows]


def _revision_effects(local_root: Path, revision_id: str) -> list[dict[str, object]]:
    return [
        e
        for e in LocalComputeDriver(local_root).effects()
        if e.get("revisionId") == revision_id or revision_id in str(e.get("workId"))
    ]


@pytest.fixture
def cleanup_gateways(local_root: Path) -> Iterator[None]:
    yield
    for runtime in local_root.glob("agents/*/revisions/*/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int) and _alive(pid):
            os.kill(pid, signal.SIGKILL)


# -- tests -------------------------------------------------------------------------------------


def test_deploy_redeploy_and_one_activation_audit_per_revision(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path, tmp_path: Path
) -> None:
    port = _expose_metrics(env, tmp_path)
    fleet.worker("drivers", concurrency=2)
    world = _make_world(db, env)
    first = _deploy_until_active(db, env, world, "the first revision")
    endpoint = worlds.agent(db, world).endpoint
    assert endpoint is not None
    assert gateways.health(endpoint)["revisionId"] == first
    driver = LocalComputeDriver(local_root)
    first_pid = driver.revision_process(world.agent_id, first)
    assert _alive(first_pid)

    second = _deploy_until_active(db, env, world, "the second revision")
    endpoint = worlds.agent(db, world).endpoint
    assert endpoint is not None and gateways.health(endpoint)["revisionId"] == second
    wait_for(lambda: not _alive(first_pid), timeout=10, message="the old gateway to stop")
    assert worlds.deployment(db, world, first).state == "superseded"
    assert (_activation_audits(db, first), _activation_audits(db, second)) == (1, 1)
    with db.transaction() as session:
        # what stays pending: each activated revision's next maintenance pass, nothing else
        pending = (
            session.execute(
                sa.select(models.ControllerWork.kind).where(
                    models.ControllerWork.state.in_(("queued", "claimed"))
                )
            )
            .scalars()
            .all()
        )
    assert set(pending) <= {"revision_maintenance"}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        exposition = response.read().decode()
    assert 'occ_agent_operation_duration_seconds_count{operation="deploy"} 2.0' in exposition
    assert (
        'occ_reconciliation_attempts_total{outcome="success",work_kind="agent_revision"}'
        in exposition
    )
    assert f"occ_work_pending {float(len(pending))}" in exposition


def test_the_older_of_two_racing_deploys_is_superseded_without_compute(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    world = _make_world(db, env)
    older = worlds.deploy(db, world)
    newer = worlds.deploy(db, world)
    older_work = models.ControllerWork.id == f"agent_revision:{older}:reconcile"
    # the newer one runs first: hold the older one's work back until the newer one is active
    # (a newer pass that waits for its gateway frees the lane, so a delay would not do)
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork)
            .where(older_work)
            .values(available_at=sa.func.clock_timestamp() + sa.text("interval '1 hour'"))
        )
    fleet.worker("drivers", concurrency=2)
    processes.nudge(env)
    worker_worlds.wait_state(db, world, newer, "active", "the newer revision")
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork)
            .where(older_work)
            .values(available_at=sa.func.clock_timestamp())
        )
    env["OCC_CLAIM_INTERVAL_MS"] = "500"
    fleet.beat()
    wait_for(
        lambda: worlds.deployment(db, world, older).reason_code == "REVISION_SUPERSEDED",
        timeout=30,
        message="the older deployment to be superseded",
    )
    assert worlds.deployment(db, world, older).state == "superseded"
    # the older item itself made no Compute call (the newer one retired it as a predecessor)
    assert [
        e
        for e in LocalComputeDriver(local_root).effects()
        if e["workId"] == f"agent_revision:{older}:reconcile"
    ] == []


def test_revoking_deploy_before_processing_denies_without_starting_anything(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    world = _make_world(db, env)
    revision_id = worlds.deploy(db, world)
    worlds.restrict_admin(db, world, "agent:deploy")
    fleet.worker("drivers")
    processes.nudge(env)
    worker_worlds.wait_state(db, world, revision_id, "failed", "the deployment")
    view = worlds.deployment(db, world, revision_id)
    assert view.reason_code == "AUTHORIZATION_DENIED"
    assert audits.denials(db, f"agent_revision:{revision_id}:reconcile") == [
        ("agents.deploy", "agent", "AUTHORIZATION_DENIED")
    ]
    assert not (local_root / "agents" / world.agent_id).exists()


def test_stop_then_deploy_again_then_delete_removes_everything(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path, tmp_path: Path
) -> None:
    _expose_metrics(env, tmp_path)
    fleet.worker("drivers", concurrency=2)
    world = _make_world(db, env)
    first = _deploy_until_active(db, env, world, "the first revision")
    driver = LocalComputeDriver(local_root)
    first_pid = driver.revision_process(world.agent_id, first)

    worlds.stop(db, world)
    processes.nudge(env)
    wait_for(
        lambda: worlds.agent(db, world).active_revision_id is None,
        timeout=30,
        message="the stop to clear the active revision",
    )
    assert not _alive(first_pid)
    assert worlds.agent(db, world).endpoint is None
    assert worlds.deployment(db, world, first).state == "stopped"

    second = _deploy_until_active(db, env, world, "the redeployed revision")
    second_pid = driver.revision_process(world.agent_id, second)
    assert _alive(second_pid)

    agent_lifecycle.delete_agent(
        db,
        world.admin,
        agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=world.agent_id),
    )
    processes.nudge(env)
    wait_for(
        lambda: worlds.agent_gone(db, world),
        timeout=30,
        message="the finalizer to remove the agent",
    )
    assert not _alive(second_pid)
    assert not (local_root / "agents" / world.agent_id).exists()
    with db.transaction() as session:
        for model, column in (
            (models.AgentRevision, models.AgentRevision.agent_id),
            (models.ControllerWork, models.ControllerWork.agent_id),
        ):
            count = session.execute(
                sa.select(sa.func.count()).select_from(model).where(column == world.agent_id)
            ).scalar_one()
            assert count == 0
        assert session.get(models.Principal, world.service_principal_id) is None
        deleted = (
            session.execute(
                sa.select(models.AuditEvent.details).where(
                    models.AuditEvent.action == "agents.lifecycle.delete",
                    models.AuditEvent.resource_id == world.agent_id,
                )
            )
            .scalars()
            .all()
        )
    assert [d["reasonCode"] for d in deleted] == ["AGENT_DELETED"]


def _gateway_pid(local_root: Path, revision_id: str) -> int | None:
    """The pid the local driver recorded for the revision's gateway (``None``: none yet)."""
    for runtime in local_root.glob(f"agents/*/revisions/{revision_id}/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int):
            return pid
    return None


def test_a_gateway_that_never_becomes_healthy_fails_at_the_deadline_and_is_retired(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    env["OCC_WORKER_CONVERGENCE_TIMEOUT_MS"] = "6000"
    env["OCC_WORKER_MAX_ATTEMPTS"] = "2"
    fleet.worker("drivers")
    fleet.beat()
    world = _make_world(db, env, document={"standIn": {"healthy": False}})
    revision_id = worlds.deploy(db, world)
    processes.nudge(env)
    wait_for(
        lambda: _alive(_gateway_pid(local_root, revision_id)),
        timeout=40,
        message="the unhealthy gateway to start",
    )
    pid = _gateway_pid(local_root, revision_id)
    worker_worlds.wait_state(
        db, world, revision_id, "failed", "the deployment (at its deadline)", timeout=40
    )
    view = worlds.deployment(db, world, revision_id)
    assert view.reason_code == "CONVERGENCE_DEADLINE_EXCEEDED"
    assert view.error is not None and view.error.data == {"timeoutMs": 6000}
    with db.transaction() as session:
        row = session.get(models.ControllerWork, f"agent_revision:{revision_id}:reconcile")
        assert row is not None
        # more unready passes than the attempt budget (2), yet it was never spent: deferrals
        # refund it (how many more depends on the machine's speed, so only "more" is asserted)
        assert row.attempt_count <= 1
    passes = audits.reconcile_passes(db, f"agent_revision:{revision_id}:reconcile")
    assert passes > int(env["OCC_WORKER_MAX_ATTEMPTS"])
    # the failed candidate keeps no runtime and no credential: the failure admitted its
    # retirement in the same transaction, and a worker carried it out, audited
    retired = wait_for(
        lambda: _retire_audits(db, revision_id),
        timeout=30,
        message="the failed revision's retirement",
    )
    assert not _alive(pid)
    assert not list(local_root.glob(f"agents/*/revisions/{revision_id}/credential"))
    assert [(d["reasonCode"], d["deploymentReasonCode"]) for d in retired] == [
        ("REVISION_RETIRED", "CONVERGENCE_DEADLINE_EXCEEDED")
    ]
    assert worlds.agent(db, world).active_revision_id is None


def test_a_worker_killed_during_activation_leaves_one_active_revision_and_one_audit(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    world = _make_world(db, env)
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "1500"
    doomed = fleet.worker("doomed")
    revision_id = worlds.deploy(db, world)
    processes.nudge(env)

    def activating() -> bool:
        return any(
            e["op"] == "activate_revision" and e["phase"] == "started"
            for e in LocalComputeDriver(local_root).effects()
        )

    wait_for(activating, timeout=40, message="activation to start")
    doomed.kill_group()
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "0"
    fleet.worker("rescuer")
    fleet.beat()
    worker_worlds.wait_state(
        db, world, revision_id, "active", "the recovered activation", timeout=40
    )
    agent = worlds.agent(db, world)
    assert agent.active_revision_id == revision_id
    assert _activation_audits(db, revision_id) == 1
    assert agent.endpoint is not None
    assert gateways.health(agent.endpoint)["revisionId"] == revision_id
