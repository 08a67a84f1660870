"""A stop of several revisions, on PostgreSQL with an in-memory driver: before every shutdown
the pass renews its claim and reads the Agent again, so a deploy admitted meanwhile, or a lost
claim, stops it before the next shutdown."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from occ.drivers.compute import base
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import fake_driver, worlds

POLICY = values.QueuePolicy(
    lease_ms=15_000, dispatch_lease_ms=30_000, max_attempts=5, convergence_timeout_ms=900_000
)


def _stopping_two(db: Database) -> tuple[worlds.World, list[str], fake_driver.FakeComputeDriver]:
    """An Agent with two deployed revisions (the second active) and a stop admitted; the
    driver the stop will run on."""
    world = support.ready_world(db)
    first, second = worlds.deploy(db, world), worlds.deploy(db, world)
    support.finish_all_work(db, "REVISION_ACTIVATED")
    with db.transaction() as session:
        session.execute(
            sa.update(models.Agent)
            .where(models.Agent.id == world.agent_id)
            .values(active_revision_id=second)
        )
    worlds.stop(db, world)
    return world, [second, first], fake_driver.FakeComputeDriver(name="local")


def _run_stop(db: Database, driver: fake_driver.FakeComputeDriver) -> str | None:
    worker = Worker(
        database=db, policy=POLICY, driver=driver, shutdown=threading.Event(), settings=Settings()
    )
    [claim] = executor.claim_batch(db, POLICY, max_in_flight=5)
    result = executor.run(worker, claim.work_id, str(claim.token))
    return None if result is None else result.code


def test_a_deploy_admitted_after_the_first_shutdown_ends_the_stop_before_the_next(
    db: Database,
) -> None:
    world, order, driver = _stopping_two(db)

    def deploy_meanwhile(operation: base.Operation) -> None:
        worlds.deploy(db, world)  # desired running again

    driver.script("stop_revision", deploy_meanwhile)

    assert _run_stop(db, driver) == "STOP_SUPERSEDED"
    assert driver.calls == [("stop_revision", order[0])]
    assert worlds.agent(db, world).active_revision_id == order[0]  # left to the deploy


def test_a_claim_lost_after_the_first_shutdown_shuts_nothing_else_down(db: Database) -> None:
    world, order, driver = _stopping_two(db)

    def lose_the_claim(operation: base.Operation) -> None:
        with db.transaction() as session:  # another worker holds the item now
            session.execute(
                sa.update(models.ControllerWork)
                .where(models.ControllerWork.kind == "agent_stopped")
                .values(claim_token=sa.func.gen_random_uuid())
            )

    driver.script("stop_revision", lose_the_claim)

    assert _run_stop(db, driver) is None  # nothing published
    assert driver.calls == [("stop_revision", order[0])]
    assert worlds.agent(db, world).active_revision_id == order[0]


def test_every_revision_stops_when_nothing_changes(db: Database) -> None:
    world, order, driver = _stopping_two(db)

    assert _run_stop(db, driver) == "AGENT_STOPPED"
    assert driver.calls == [("stop_revision", order[0]), ("stop_revision", order[1])]
    assert worlds.agent(db, world).active_revision_id is None
