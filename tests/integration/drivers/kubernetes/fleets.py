"""A kubernetes fleet of real workers for the tests that run the driver end to end: control
and driver workers and beat against a cluster (the fake API server), and one Agent's world
that they made ready."""

from __future__ import annotations

from pathlib import Path

from occ.foundation import harnesses
from occ.state.db import Database
from tests.integration.drivers.kubernetes import helpers
from tests.support import processes, worker_worlds, worlds

TIMEOUT = 40.0


def reconciled(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    kubeconfig: Path,
    *,
    installation: str,
    harness: harnesses.Harness = harnesses.Harness.OPENCLAW,
    **settings: str,
) -> worlds.World:
    """Start the workers and beat on ``kubeconfig``'s cluster (``settings``: more ``OCC_*``
    variables, or other values of the defaults here) and make a world they reconciled, in a new
    Installation called ``installation`` (its administrator: the world's ``admin``)."""
    admin = worlds.installation_admin(db, installation)  # workers wait for a bootstrap
    env.update(
        {
            "OCC_COMPUTE_DRIVER": "kubernetes",
            "OCC_KUBERNETES_KUBECONFIG": str(kubeconfig),
            "OCC_KUBERNETES_GATEWAY_IMAGE": helpers.GATEWAY_IMAGE,
            "OCC_CLAIM_INTERVAL_MS": "500",
            "OCC_UNREADY_RECHECK_MS": "200",
            **settings,
        }
    )
    fleet.control_worker()
    fleet.worker("drivers", concurrency=2)
    fleet.beat()
    [world] = worker_worlds.ready(
        db,
        env,
        admin=admin,
        compute_driver="kubernetes",
        secret_value=helpers.CREDENTIAL,
        document={"model": "m"},
        harness=harness,
        reconciled_within=TIMEOUT,
    )
    return world
