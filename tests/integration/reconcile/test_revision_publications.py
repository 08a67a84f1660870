"""A managed account's withdrawal against a deploy pass of a revision pinning it, on
PostgreSQL: whichever commits first, the Agent never ends up running on the withdrawn account
unstopped.

The pass checks the account once when it loads; a withdrawal recorded after that and before
the pointer moves finds no Agent running on the account, so the pointer's move must refuse
it. One recorded after the move finds the Agent and admits its stop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import pytest

from occ.controller import account_withdrawals
from occ.drivers.account import standin
from occ.drivers.compute import base
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from occ.state.work_keys import WorkKey, WorkKind
from tests.integration.reconcile import support
from tests.support import audits, fake_driver, work_items, worlds

DEADLINE_S = 30.0


class Held:
    """A driver step that holds the pass inside its Compute call until released."""

    def __init__(self, answer: base.Ready | base.Activation) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self._answer = answer

    def __call__(self, _operation: base.Operation) -> base.Ready | base.Activation:
        self.entered.set()
        assert self.release.wait(DEADLINE_S), "the test never released the pass"
        return self._answer


class Scene:
    """An Agent on a managed account, its revision deployed, and a worker on a fake driver."""

    def __init__(self, db: Database, tmp_path: Path) -> None:
        self.db = db
        self.world = support.ready_world(db)
        self.backend = standin.StandinBackend(tmp_path / "accounts")
        self.account_id = worlds.use_managed_account(db, self.world, self.backend)
        self.revision_id = worlds.deploy(db, self.world, accounts=self.backend)
        self.work_id = f"agent_revision:{self.revision_id}:reconcile"
        self.driver = fake_driver.FakeComputeDriver(name="local")
        self.worker = Worker(
            database=db,
            policy=support.POLICY,
            driver=self.driver,
            shutdown=threading.Event(),
            accounts=self.backend,
            settings=Settings(database_url="postgresql://unused", fingerprint_key="k" * 40),
        )

    def run_until(self, work_id: str, *codes: str) -> Callable[[], None]:
        return lambda: support.run_until(
            self.db, self.worker, work_id, *codes, ended=("succeeded", "failed_permanent")
        )

    def withdraw(self) -> account_withdrawals.WithdrawalRecorded:
        """The Backend withdraws the account and occ records it (committed on return)."""
        self.backend.withdraw(self.account_id)
        return account_withdrawals.record_withdrawal(
            self.db,
            self.world.admin,
            namespace_id=self.world.namespace_id,
            account_id=self.account_id,
            backend=self.backend,
        )


@pytest.fixture
def pool() -> Iterator[futures.ThreadPoolExecutor]:
    with futures.ThreadPoolExecutor(max_workers=1) as executor:
        yield executor


def test_a_withdrawal_recorded_before_the_pointer_moves_fails_the_deploy(
    db: Database, tmp_path: Path, pool: futures.ThreadPoolExecutor
) -> None:
    scene = Scene(db, tmp_path)
    held = Held(base.Ready())
    scene.driver.script("prepare_revision", held, subject=scene.revision_id)

    deploying = pool.submit(scene.run_until(scene.work_id))
    assert held.entered.wait(DEADLINE_S), "the pass never reached prepare_revision"
    recorded = scene.withdraw()
    held.release.set()
    deploying.result(timeout=DEADLINE_S * 2)

    # the withdrawal came after the pass's credential check and before its pointer moved:
    # no Agent ran on the account yet, so only the pointer's move can refuse it
    assert recorded.agent_ids == ()
    assert worlds.deployment(db, scene.world, scene.revision_id).reason_code == (
        "CREDENTIAL_WITHDRAWN"
    )
    assert worlds.agent(db, scene.world).active_revision_id != scene.revision_id
    assert ("agents.deploy", "account", "CREDENTIAL_WITHDRAWN") in audits.denials(db, scene.work_id)
    assert scene.driver.count("activate_revision") == 0
    # the failure admits the prepared runtime's retirement, and it is retired
    [retirement] = work_items.matching(
        db,
        models.ControllerWork.kind == WorkKind.REVISION_MAINTENANCE,
        models.ControllerWork.revision_id == scene.revision_id,
    )
    scene.run_until(retirement.id, "REVISION_RETIRED")()
    assert ("retire_revision", scene.revision_id) in scene.driver.calls


def test_a_withdrawal_recorded_after_the_pointer_moved_stops_the_agent(
    db: Database, tmp_path: Path, pool: futures.ThreadPoolExecutor
) -> None:
    scene = Scene(db, tmp_path)
    held = Held(base.Activation(endpoint=f"fake://{scene.revision_id}"))
    scene.driver.script("activate_revision", held, subject=scene.revision_id)

    deploying = pool.submit(scene.run_until(scene.work_id, "REVISION_ACTIVATED"))
    assert held.entered.wait(DEADLINE_S), "the pass never reached activate_revision"
    recorded = scene.withdraw()
    held.release.set()
    deploying.result(timeout=DEADLINE_S * 2)

    # the pointer had moved: the withdrawal found the Agent and admitted its stop
    assert recorded.agent_ids == (scene.world.agent_id,)
    withdrawal = str(
        WorkKey(WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL, scene.world.agent_id, scene.account_id)
    )
    scene.run_until(withdrawal, "AGENT_STOPPED")()
    agent = worlds.agent(db, scene.world)
    assert agent.active_revision_id is None
    assert agent.desired_runtime_state == "stopped"
    assert ("stop_revision", scene.revision_id) in scene.driver.calls
