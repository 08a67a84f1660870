"""A deployment that misses its convergence deadline keeps what the runtime reported: the
failed row's result holds the timeout and the runtime failure the last pass observed (the
driver's code), the deployment's status shows them, and a plain "not ready yet" is no runtime
failure. PostgreSQL and the ``local`` driver, told to answer as a failing runtime would."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds

POLICY = values.QueuePolicy(lease_ms=15_000, convergence_timeout_ms=1)
"""Past the deadline at the first deferral."""


class NeverReady(LocalComputeDriver):
    """Its runtime never becomes ready; ``waits_for`` is what its driver says it waits for."""

    def __init__(self, root: Path, waits_for: str | None) -> None:
        super().__init__(root, maintenance_interval_s=3600.0)
        self.waits_for = waits_for

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        return base.Pending(self.waits_for or "REVISION_INCOMPLETE", code=self.waits_for)


@pytest.mark.parametrize(
    ("waits_for", "runtime_failure"),
    [("GATEWAY_CRASH_LOOP", {"runtimeFailure": "GATEWAY_CRASH_LOOP"}), (None, {})],
)
def test_a_missed_deadline_keeps_the_timeout_and_the_runtime_failure(
    db: Database,
    tmp_path: Path,
    waits_for: str | None,
    runtime_failure: dict[str, str],
) -> None:
    world = support.ready_world(db)
    revision_id = worlds.deploy(db, world)
    worker = Worker(
        database=db,
        policy=POLICY,
        driver=NeverReady(tmp_path / "local", waits_for),
        shutdown=threading.Event(),
        settings=Settings(database_url="postgresql://unused"),
    )
    [claim] = [
        c
        for c in executor.claim_batch(db, POLICY, max_in_flight=10)
        if c.owner.revision_id == revision_id
    ]

    result = executor.run(worker, claim.work_id, str(claim.token))

    assert result is not None and result.code == "CONVERGENCE_DEADLINE_EXCEEDED"
    status = worlds.deployment(db, world, revision_id)
    assert status.state == "failed" and status.error is not None
    assert status.error.code == "CONVERGENCE_DEADLINE_EXCEEDED"
    assert dict(status.error.data or {}) == {"timeoutMs": 1, **runtime_failure}
