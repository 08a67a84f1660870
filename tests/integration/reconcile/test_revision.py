"""Deploys on PostgreSQL and the ``local`` driver retire only what is live: each earlier
revision is retired by the first deploy after it, and never again by later ones."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds


class RetirementsCounted(LocalComputeDriver):
    """The local driver, counting which revisions it was asked to retire."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, maintenance_interval_s=3600.0)
        self.retired: list[str] = []

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.retired.append(revision.revision_id)
        super().retire_revision(operation, revision)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[RetirementsCounted]:
    counted = RetirementsCounted(tmp_path / "local")
    yield counted
    support.kill_gateways(tmp_path / "local")


def _activate(db: Database, worker: Worker, world: worlds.World) -> str:
    revision_id = worlds.deploy(db, world)
    support.run_until(db, worker, f"agent_revision:{revision_id}:reconcile", "REVISION_ACTIVATED")
    return revision_id


def test_each_deploy_retires_only_the_revisions_still_live(
    db: Database, driver: RetirementsCounted
) -> None:
    worker = Worker(
        database=db,
        policy=support.POLICY,
        driver=driver,
        shutdown=threading.Event(),
        settings=Settings(database_url="postgresql://unused"),
    )
    world = support.ready_world(db)

    deployed = []
    retired_by_deploy = []
    for _ in range(4):
        before = len(driver.retired)
        deployed.append(_activate(db, worker, world))
        retired_by_deploy.append(driver.retired[before:])

    # the first deploy has nothing to retire; each later one retires exactly its predecessor
    assert retired_by_deploy == [[], [deployed[0]], [deployed[1]], [deployed[2]]]
    with db.transaction() as session:
        recorded = set(
            session.execute(
                sa.select(models.RevisionRetirement.revision_id).where(
                    models.RevisionRetirement.agent_id == world.agent_id
                )
            ).scalars()
        )
    assert recorded == set(deployed[:3])
