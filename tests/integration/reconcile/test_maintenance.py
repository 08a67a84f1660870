"""The fleet observer and its repairs, run in-process on PostgreSQL and the ``local`` driver:
an idle fleet is observed without a work row, an audit row or a message; a killed gateway gets
one repair, which restarts it and records it ready; repairs of a runtime that stays degraded
are spaced; a revision a newer deploy is replacing is left alone; observers share the fleet."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.controller import agent_lifecycle
from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor, maintenance, observer
from occ.reconcile.environment import Worker
from occ.state import models, observations
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import locks, work_items, worlds
from tests.support.processes import wait_for

INTERVAL_S = 60.0


@pytest.fixture
def worker(db: Database, tmp_path: Path) -> Iterator[Worker]:
    yield support.local_worker(db, tmp_path / "local", interval_s=INTERVAL_S)
    support.kill_gateways(tmp_path / "local")


def _activate(db: Database, worker: Worker, world: worlds.World) -> str:
    """Deploy the Agent and run passes until its new revision is active; the revision's id."""
    revision_id = worlds.deploy(db, world)
    support.run_until(db, worker, f"agent_revision:{revision_id}:reconcile", "REVISION_ACTIVATED")
    return revision_id


def _rewind(db: Database, seconds: float = INTERVAL_S) -> None:
    """Move every observer cursor back: everything is due again (as one interval later)."""
    with db.transaction() as session:
        session.execute(
            sa.update(models.ObserverCursor).values(
                observed_until=sa.func.clock_timestamp() - sa.text(f"interval '{seconds} seconds'")
            )
        )


def _counts(db: Database) -> tuple[int, int]:
    """(work rows, audit rows)."""
    with db.transaction() as session:
        work = session.execute(sa.select(sa.func.count()).select_from(models.ControllerWork))
        audit = session.execute(sa.select(sa.func.count()).select_from(models.AuditEvent))
        return work.scalar_one(), audit.scalar_one()


def _repairs(db: Database, revision_id: str) -> list[models.ControllerWork]:
    maintenance = f"agent_revision:{revision_id}:maintenance:%"
    return work_items.matching(db, models.ControllerWork.id.like(maintenance))


def _runtime(db: Database, agent_id: str) -> tuple[str, str, int] | None:
    with db.transaction() as session:
        row = session.execute(
            sa.select(
                models.AgentRuntime.status,
                models.AgentRuntime.reason_code,
                models.AgentRuntime.repairs,
            ).where(models.AgentRuntime.agent_id == agent_id)
        ).first()
    return None if row is None else (row.status, row.reason_code, row.repairs)


def _local(worker: Worker) -> LocalComputeDriver:
    """The worker's driver, the local one these tests run on (its processes can be killed)."""
    assert isinstance(worker.driver, LocalComputeDriver)
    return worker.driver


def _killed(db: Database, worker: Worker) -> tuple[worlds.World, str, int]:
    """A ready world whose revision became active, then lost its gateway process: the world,
    the revision and the killed gateway's pid."""
    world = support.ready_world(db)
    revision_id = _activate(db, worker, world)
    driver = _local(worker)
    pid = driver.revision_process(world.agent_id, revision_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(
        lambda: driver.revision_process(world.agent_id, revision_id) is None,
        timeout=10,
        message="the gateway to be gone",
    )
    return world, revision_id, pid


def test_an_idle_fleet_is_observed_without_a_work_row_an_audit_row_or_a_repair(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    _activate(db, worker, world)
    before = _counts(db)

    first = executor.observe(worker)
    _rewind(db)
    second = executor.observe(worker)

    assert (first.observed, second.observed) == (1, 1)
    assert second.verdicts == {observer.Verdict.UNCHANGED: 1}
    assert _counts(db) == before
    assert _runtime(db, world.agent_id) == ("ready", "REVISION_ACTIVATED", 0)


def test_a_killed_gateway_gets_one_repair_which_restarts_it_and_records_it_ready(
    db: Database, worker: Worker
) -> None:
    world, revision, first_pid = _killed(db, worker)
    _rewind(db)

    tick = executor.observe(worker)
    _rewind(db)
    again = executor.observe(worker)  # the repair is still queued: no second one

    assert tick.verdicts == {observer.Verdict.REPAIR: 1}
    assert again.verdicts == {observer.Verdict.SPACED: 1}
    [repair] = _repairs(db, revision)
    assert repair.state == "queued" and repair.actor_id == world.admin
    assert _runtime(db, world.agent_id) == ("degraded", "REVISION_NOT_RUNNING", 1)
    support.run_until(db, worker, repair.id, "REVISION_ALREADY_ACTIVE")
    second_pid = _local(worker).revision_process(world.agent_id, revision)
    assert second_pid is not None and second_pid != first_pid
    assert _runtime(db, world.agent_id) == ("ready", "REVISION_ALREADY_ACTIVE", 0)
    _rewind(db)
    assert executor.observe(worker).verdicts == {observer.Verdict.UNCHANGED: 1}


def test_repairs_of_a_runtime_that_stays_gone_are_spaced(db: Database, worker: Worker) -> None:
    _, revision, _ = _killed(db, worker)
    with db.transaction() as session:  # the runtime was repaired three times already
        session.execute(
            sa.update(models.AgentRuntime).values(
                repairs=3, repair_after=sa.func.clock_timestamp() + sa.text("interval '1 hour'")
            )
        )
    _rewind(db)

    assert executor.observe(worker).verdicts == {observer.Verdict.SPACED: 1}
    assert _repairs(db, revision) == []


def test_a_revision_a_newer_deploy_is_replacing_is_left_to_that_deploy(
    db: Database, worker: Worker
) -> None:
    world, first, _ = _killed(db, worker)
    worlds.deploy(db, world)  # admitted, not run
    _rewind(db)

    assert executor.observe(worker).verdicts == {observer.Verdict.DEPLOYING: 1}
    assert _repairs(db, first) == []


def test_a_repair_of_a_revision_a_newer_deploy_was_admitted_over_does_nothing(
    db: Database, worker: Worker
) -> None:
    world, first, _ = _killed(db, worker)
    _rewind(db)
    executor.observe(worker)  # admits the repair
    [repair] = _repairs(db, first)
    # claimed before the deploy (a deploy queued beside it would be the lane's head: intent
    # runs first), and the deploy admitted before the repair runs
    [claim] = executor.claim_batch(db, support.POLICY, max_in_flight=10)
    second = worlds.deploy(db, world)

    result = executor.run(worker, claim.work_id, str(claim.token))

    assert claim.work_id == repair.id
    assert result is not None and result.code == "REVISION_MAINTENANCE_SUPERSEDED"
    # no repair of the older revision: its gateway stays gone while the newer deploy waits
    assert _local(worker).revision_process(world.agent_id, first) is None
    support.run_until(db, worker, f"agent_revision:{second}:reconcile", "REVISION_ACTIVATED")


def test_an_observer_waits_for_a_short_hold_of_the_cursor_then_observes(
    db: Database, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a longer wait than the product's, so that a loaded machine cannot make the test miss it
    monkeypatch.setattr(observations, "CURSOR_WAIT_MS", 10_000)
    world = support.ready_world(db)
    _activate(db, worker, world)
    executor.observe(worker)  # makes the cursor
    _rewind(db, seconds=INTERVAL_S)  # the Agent is due again
    ticks: list[observer.Tick] = []
    with db.transaction() as session:
        session.execute(sa.text("SELECT 1 FROM occ.observer_cursors FOR UPDATE"))
        waiting = threading.Thread(target=lambda: ticks.append(executor.observe(worker)))
        waiting.start()
        wait_for(lambda: locks.waiters(db) > 0, timeout=8, interval=0.01)
    waiting.join(timeout=30)

    assert len(ticks) == 1
    assert not ticks[0].held and ticks[0].observed == 1


def test_an_observer_gives_up_on_a_hold_past_the_wait_and_does_nothing(
    db: Database, worker: Worker
) -> None:
    world = support.ready_world(db)
    _activate(db, worker, world)
    executor.observe(worker)
    with db.transaction() as session:
        session.execute(sa.text("SELECT 1 FROM occ.observer_cursors FOR UPDATE"))
        started = time.monotonic()
        held = executor.observe(worker)
        waited_s = time.monotonic() - started

    assert held.held and held.observed == 0
    assert waited_s >= observations.CURSOR_WAIT_MS / 1000 * 0.9


def test_a_cursor_far_behind_catches_up_on_one_interval_only(db: Database, worker: Worker) -> None:
    world = support.ready_world(db)
    _activate(db, worker, world)
    executor.observe(worker)
    _rewind(db, seconds=10 * INTERVAL_S)

    tick = executor.observe(worker)

    assert tick.observed == 1  # observed once, not once per missed interval
    assert tick.lag_s >= 9 * INTERVAL_S
    assert tick.caught_up


def test_the_activation_is_audited_once_however_many_events_follow(
    db: Database, worker: Worker
) -> None:
    world, revision, _ = _killed(db, worker)
    with db.transaction() as session:  # 60 later events about the revision
        for _ in range(60):
            session.execute(
                sa.text(
                    "SELECT occ.append_audit_event('mutation', 'probe', :actor, :ns, "
                    "'agent_revision', :rev, NULL, 'success', '{}'::jsonb)"
                ),
                {"actor": world.admin, "ns": world.namespace_id, "rev": revision},
            )
    _rewind(db)
    executor.observe(worker)
    [repair] = _repairs(db, revision)
    support.run_until(db, worker, repair.id, "REVISION_ALREADY_ACTIVE")

    with db.transaction() as session:
        activations = session.execute(
            sa.select(sa.func.count())
            .select_from(models.AuditEvent)
            .where(
                models.AuditEvent.resource_id == revision,
                models.AuditEvent.action == "agents.lifecycle.activate",
            )
        ).scalar_one()
    assert activations == 1


def test_a_driver_that_cannot_observe_now_leaves_the_fleet_for_the_next_interval(
    db: Database, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, revision, _ = _killed(db, worker)
    _rewind(db)

    def not_now(revisions: object) -> object:
        raise base.TransientDriverError("KUBERNETES_NOT_OBSERVED", "the cache is not current")

    monkeypatch.setattr(worker.driver, "observe_revisions", not_now)
    tick = executor.observe(worker)

    assert (tick.observed, tick.refused, tick.verdicts) == (1, 1, {})
    assert _repairs(db, revision) == []  # not taken for gone: nothing is repaired


def _settle_queued(db: Database, worker: Worker) -> None:
    """Run every queued item in-process until none is left (whatever each ends with)."""

    def drained() -> bool:
        with db.transaction() as session:
            session.execute(
                sa.update(models.ControllerWork)
                .where(models.ControllerWork.state == "queued")
                .values(available_at=sa.func.clock_timestamp())
            )
            live = session.execute(
                sa.select(sa.func.count())
                .select_from(models.ControllerWork)
                .where(models.ControllerWork.state.in_(("queued", "claimed")))
            ).scalar_one()
        if live == 0:
            return True
        for claim in executor.claim_batch(db, support.POLICY, max_in_flight=10):
            executor.run(worker, claim.work_id, str(claim.token))
        return False

    wait_for(drained, timeout=30, interval=0.1, message="the queued work to settle")


def test_denied_repairs_stop_after_the_bound_until_a_person_asks_again(
    db: Database, worker: Worker
) -> None:
    world, revision, _ = _killed(db, worker)
    with db.transaction() as session:  # the runtime grant of the Agent's principal is removed
        session.execute(
            sa.update(models.AccessBinding)
            .where(models.AccessBinding.principal_id == world.service_principal_id)
            .values(revoked_at=sa.func.clock_timestamp())
        )

    verdicts = []
    for _ in range(maintenance.MAX_REPAIRS + 3):
        with db.transaction() as session:  # as if the spacing had passed
            session.execute(sa.update(models.AgentRuntime).values(repair_after=None))
        _rewind(db)
        verdicts.append(executor.observe(worker).verdicts)
        _settle_queued(db, worker)

    repairs = _repairs(db, revision)
    assert (
        verdicts
        == [{observer.Verdict.REPAIR: 1}] * maintenance.MAX_REPAIRS
        + [{observer.Verdict.EXHAUSTED: 1}] * 3
    )
    assert [r.reason_code for r in repairs] == ["AUTHORIZATION_DENIED"] * maintenance.MAX_REPAIRS
    denied = [d for r in repairs for d in support.denials(db, r.id)]
    assert len(denied) == maintenance.MAX_REPAIRS
    assert _runtime(db, world.agent_id) == (
        "degraded",
        "REVISION_NOT_RUNNING",
        maintenance.MAX_REPAIRS,
    )

    # a person asks for a repair: one is admitted at once, owned by them, counted afresh
    agent_lifecycle.repair_agent(
        db,
        world.admin,
        agent_lifecycle.RepairAgent(namespace_id=world.namespace_id, agent_id=world.agent_id),
    )
    [asked] = [r for r in _repairs(db, revision) if r.state == "queued"]
    assert asked.actor_id == world.admin
    assert _runtime(db, world.agent_id) == ("degraded", "REVISION_NOT_RUNNING", 0)
