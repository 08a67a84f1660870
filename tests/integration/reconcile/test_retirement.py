"""A deployment that fails for good, on PostgreSQL and the ``local`` driver: the failure moves
the active pointer back to the newest revision that succeeded and admits the failed revision's
retirement, whose pass stops its gateway, removes its credential and audits it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.controller import account_withdrawals
from occ.controller import agents as agent_cases
from occ.drivers.account import standin
from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import retirement, specs
from occ.reconcile.environment import Worker
from occ.state import agents, deploys, models, revisions
from occ.state.db import Database, Session
from tests.integration.reconcile import support
from tests.support import worlds


@pytest.fixture
def worker(db: Database, tmp_path: Path) -> Iterator[Worker]:
    yield support.local_worker(db, tmp_path / "local")
    support.kill_gateways(tmp_path / "local")


def _end(session: Session, revision_id: str, state: str, code: str) -> None:
    """End the revision's deployment in ``state`` with ``code`` (without a claim)."""
    session.execute(
        sa.update(models.ControllerWork)
        .where(models.ControllerWork.id == f"agent_revision:{revision_id}:reconcile")
        .values(state=state, reason_code=code, completed_at=sa.func.clock_timestamp())
    )


def _fail_deployment(db: Database, world: worlds.World, revision_id: str) -> None:
    """End the revision's deployment failed for good, applying its kind's effect, as every
    terminal failure does (here without a claim: the effect is what is under test)."""
    with db.transaction() as session:
        _end(session, revision_id, "failed_permanent", "RUNTIME_STARTUP_FAILED")
        item = deploys.deployment(session, revision_id)
        assert item is not None
        retirement.deployment_failed(session, item, {})


def _agent(db: Database, world: worlds.World) -> agents.Agent:
    with db.transaction() as session:
        agent = agents.get(session, world.namespace_id, world.agent_id)
    assert agent is not None
    return agent


def _retirements(db: Database, revision_id: str) -> list[models.ControllerWork]:
    with db.transaction() as session:
        return list(
            session.scalars(
                sa.select(models.ControllerWork).where(
                    models.ControllerWork.id.like(f"agent_revision:{revision_id}:maintenance:%")
                )
            )
        )


def test_a_failed_active_revision_hands_the_pointer_back_and_is_retired(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    first = worlds.deploy(db, world)
    support.run_until(db, worker, f"agent_revision:{first}:reconcile", "REVISION_ACTIVATED")
    second = worlds.deploy(db, world)
    with db.transaction() as session:
        # the newer revision's pass moved the pointer and started its gateway, then failed
        assert agents.activate(session, world.agent_id, expected=first, candidate=second)
    driver = worker.driver
    assert isinstance(driver, LocalComputeDriver)
    with db.transaction() as session:
        row = revisions.get_revision(session, world.agent_id, second)
    assert row is not None
    operation = base.Operation("test", "token", threading.Event())
    driver.prepare_revision(operation, specs.revision(row))
    assert driver.revision_process(world.agent_id, second) is not None

    _fail_deployment(db, world, second)

    agent = _agent(db, world)
    assert (agent.active_revision_id, agent.endpoint) == (first, None)
    [item] = _retirements(db, second)
    assert item.state == "queued"
    support.run_until(db, worker, item.id, "REVISION_RETIRED")
    assert driver.revision_process(world.agent_id, second) is None
    assert driver.revision_process(world.agent_id, first) is not None  # left running
    assert _agent(db, world).active_revision_id == first
    # the retirement admitted a repair of the active revision (a runtime the failed one
    # shared comes back at once, not at the next observation)
    [repair] = _retirements(db, first)
    assert repair.actor_id == world.admin


def test_a_failed_first_revision_clears_the_pointer(db: Database, worker: Worker) -> None:
    world = support.ready_world(db)
    first = worlds.deploy(db, world)
    with db.transaction() as session:
        assert agents.activate(session, world.agent_id, expected=None, candidate=first)

    _fail_deployment(db, world, first)

    assert _agent(db, world).active_revision_id is None
    [item] = _retirements(db, first)
    support.run_until(db, worker, item.id, "REVISION_RETIRED")


def test_the_pointer_never_goes_back_to_a_revision_on_a_withdrawn_account(
    db: Database, tmp_path: Path
) -> None:
    world = support.ready_world(db)
    backend = standin.StandinBackend(tmp_path / "accounts")
    account_id = worlds.use_managed_account(db, world, backend)
    first = worlds.deploy(db, world, accounts=backend)
    with db.transaction() as session:
        _end(session, first, "succeeded", "REVISION_ACTIVATED")
        assert agents.activate(session, world.agent_id, expected=None, candidate=first)
    agent_cases.update_agent(
        db,
        world.admin,
        agent_cases.UpdateAgent(
            namespace_id=world.namespace_id,
            agent_id=world.agent_id,
            harness_auth=agents.HarnessAuth(agents.SECRET_SOURCE, secret_id=world.secret_id),
        ),
    )
    second = worlds.deploy(db, world)
    with db.transaction() as session:  # the second's pass moved the pointer
        assert agents.activate(session, world.agent_id, expected=first, candidate=second)
    backend.withdraw(account_id)
    recorded = account_withdrawals.record_withdrawal(
        db, world.admin, namespace_id=world.namespace_id, account_id=account_id, backend=backend
    )
    assert recorded.agent_ids == ()  # no Agent runs on it: the pointer names the second

    _fail_deployment(db, world, second)

    # the first is the newest revision that activated, but its credential source is withdrawn
    assert _agent(db, world).active_revision_id is None
