"""Hook owners selected at startup, end to end: Celery workers, PostgreSQL, Redis and local
gateways. A deploy admitted under the reference Sandbox Driver starts with its placeholders and
a runtime identity; stopping the Agent revokes that identity before the gateway goes.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.controller import deployments, installation
from occ.drivers import selection
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.iam import identities
from occ.settings.config import Settings
from occ.state.db import Database
from tests.support import processes, worker_worlds, worlds
from tests.support.processes import wait_for

SELECTED = {"OCC_SANDBOX_DRIVER": "reference", "OCC_IAM_HOOK": "runtime-identities"}


@pytest.fixture
def gateways(local_root: Path) -> Iterator[LocalComputeDriver]:
    driver = LocalComputeDriver(local_root)
    yield driver
    for pid in driver.gateway_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _environment(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode().partition("=")[::2] for entry in entries if entry)


def test_selected_owners_take_part_in_a_deploy_and_a_stop(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    gateways: LocalComputeDriver,
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "identities"
    env.update(SELECTED, OCC_IAM_IDENTITY_ROOT=str(ledger))
    fleet.env.update(SELECTED, OCC_IAM_IDENTITY_ROOT=str(ledger))
    installation.bootstrap_installation(db, name="owners", admin_name="admin")
    fleet.control_worker()
    fleet.worker("drivers")
    admin = worlds.installation_admin(db, "owners")
    [world] = worker_worlds.ready(db, env, admin=admin, secret_value="sk-never-an-owners")
    # the API selects from the same startup configuration
    sandbox = selection.select(Settings(sandbox_driver="reference")).sandbox
    assert sandbox is not None
    revision_id = deployments.deploy_agent(
        db,
        world.admin,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent_id),
        sandbox=sandbox,
    ).deployment_id
    processes.nudge(env)
    worker_worlds.wait_state(db, world, revision_id, "active", "the sandboxed revision")

    pid = gateways.revision_process(world.agent_id, revision_id)
    assert pid is not None
    environment = _environment(pid)
    owner = identities.RuntimeIdentities(ledger)
    [record] = owner.records(world.namespace_id)
    assert environment["SANDBOX_PROFILE"] == sandbox.profile
    assert environment[identities.ENVIRONMENT_NAME] == record["identity"]
    assert record["revokedAt"] is None
    assert "sk-never-an-owners" not in "".join(p.read_text() for p in ledger.rglob("*.json"))

    worlds.stop(db, world)
    processes.nudge(env)
    wait_for(
        lambda: owner.records(world.namespace_id)[0]["revokedAt"] is not None,
        timeout=30,
        message="the stop to revoke the runtime identity",
    )
    wait_for(
        lambda: gateways.revision_process(world.agent_id, revision_id) is None,
        timeout=30,
        message="the gateway to stop",
    )
