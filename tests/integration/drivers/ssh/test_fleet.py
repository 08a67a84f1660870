"""The ``ssh`` driver under the worker fleet: Celery workers, PostgreSQL, Redis and a real
OpenSSH server. A deploy becomes active behind a unit on the host, its endpoint answers for the
revision, and a stop stops the unit."""

from __future__ import annotations

from pathlib import Path

import yaml

from occ.controller import installation
from occ.drivers.compute.ssh import hostside
from occ.state.db import Database
from tests.support import gateways, processes, ssh_server, worker_worlds, worlds
from tests.support.processes import wait_for


def test_a_deploy_and_a_stop_through_the_fleet(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    ssh_host: ssh_server.Server,
    root: Path,
    tmp_path: Path,
) -> None:
    config = tmp_path / "occ.yaml"
    config.write_text(yaml.safe_dump({"ssh_hosts": [ssh_host.pool_entry()]}))
    chosen = {"OCC_COMPUTE_DRIVER": "ssh", "OCC_CONFIG_PATH": str(config)}
    chosen["OCC_SSH_ROOT"] = str(root)
    env.update(chosen)
    fleet.env.update(chosen)
    installation.bootstrap_installation(db, name="ssh", admin_name="admin")
    fleet.control_worker()
    fleet.worker("drivers")
    admin = worlds.installation_admin(db, "ssh")
    # the fleet places the Namespace on the host and makes it ready
    [world] = worker_worlds.ready(
        db, env, admin=admin, secret_value="sk-over-ssh", compute_driver="ssh", reconciled_within=60
    )
    assert (root / "namespaces" / world.namespace_id).is_dir()
    revision_id = worlds.deploy(db, world)
    processes.nudge(env)
    worker_worlds.wait_state(db, world, revision_id, "active", "the revision on ssh", timeout=60)
    endpoint = worlds.agent(db, world).endpoint
    assert endpoint is not None
    assert gateways.health(endpoint)["revisionId"] == revision_id
    unit = root / "units" / hostside.unit_name(world.agent_id)
    assert unit.read_text().splitlines()[0] == f"{hostside.REVISION_LINE}{revision_id}"

    worlds.stop(db, world)
    processes.nudge(env)
    pid_file = root / "run" / f"{hostside.unit_name(world.agent_id)[: -len('.service')]}.pid"
    wait_for(lambda: not pid_file.exists(), timeout=30, message="the stop to stop the unit")
