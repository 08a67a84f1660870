"""A Hypothesis state machine drives the real queue and checks it against a simple model.

The model knows each item's lane, class (a deployment or a repair), state, attempt count and
which token is live. Items are always made available at once (the test pulls
``available_at`` forward after a backoff), so a claim must take exactly one head per free
lane up to its limit, and a lane's repair only when no deployment of it is queued.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from occ.foundation import errors
from occ.state import values, work_claims, work_keys, work_queue
from occ.state.db import Database
from tests.support import databases, rows

POLICY = values.QueuePolicy(
    lease_ms=60_000, dispatch_lease_ms=60_000, max_attempts=3, convergence_timeout_ms=3_600_000
)
LANES = 3


@dataclasses.dataclass
class ModelItem:
    lane: str
    repair: bool = False
    """A repair (the repair class) rather than a deployment (intent)."""
    state: str = "queued"
    attempts: int = 0
    started: bool = False
    token: values.Claim | None = None
    expired: bool = False


class QueueMachine(RuleBasedStateMachine):
    app: ClassVar[Database]
    owner: ClassVar[Database]
    urls: ClassVar[databases.DatabaseUrls]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[str, ModelItem] = {}
        self.spent: list[values.Claim] = []

    @initialize()
    def seed(self) -> None:
        databases.empty(self.urls)
        with self.app.transaction() as session:
            self.actor = rows.principal(session)
            self.namespace_id = rows.namespace(session, created_by=self.actor, status="ready")
            self.agents = [
                rows.agent(session, namespace_id=self.namespace_id, name=f"a{n}")
                for n in range(LANES)
            ]
        self.revisions = 0

    # -- helpers ---------------------------------------------------------------------------

    def _available_now(self, work_id: str) -> None:
        with self.owner.transaction() as session:
            session.execute(
                sa.text(
                    "UPDATE occ.controller_work SET available_at = clock_timestamp() WHERE id = :id"
                ),
                {"id": work_id},
            )

    def _live(self, claim: values.Claim) -> bool:
        item = self.items[claim.work_id]
        return item.state == "claimed" and item.token == claim and not item.expired

    def _spend(self, item: ModelItem) -> None:
        if item.token is not None:
            self.spent.append(item.token)
        item.token, item.expired = None, False

    # -- rules -----------------------------------------------------------------------------

    @precondition(lambda self: len(self.items) < 12)
    @rule(lane=st.integers(0, LANES - 1), repair=st.booleans())
    def enqueue(self, lane: int, repair: bool) -> None:
        agent_id = self.agents[lane]
        self.revisions += 1
        with self.app.transaction() as session:
            revision_id = rows.revision(
                session,
                namespace_id=self.namespace_id,
                agent_id=agent_id,
                actor_id=self.actor,
                number=self.revisions,
            )
            key, owner = rows.revision_work(self.namespace_id, agent_id, revision_id, self.actor)
            if repair:
                key = work_keys.revision_maintenance(revision_id, self.revisions)
            work_id = str(key)
            work_queue.enqueue(session, key, owner)
        self.items[work_id] = ModelItem(lane=agent_id, repair=repair)

    @precondition(lambda self: any(i.state == "queued" for i in self.items.values()))
    @rule(limit=st.integers(1, 4), start_now=st.booleans())
    def claim(self, limit: int, start_now: bool) -> None:
        busy = {i.lane for i in self.items.values() if i.state == "claimed"}
        free = {i.lane for i in self.items.values() if i.state == "queued"} - busy
        with self.app.transaction() as session:
            taken = work_claims.claim(session, POLICY, limit=limit)
        assert len(taken) == min(limit, len(free))
        assert len({self.items[c.work_id].lane for c in taken}) == len(taken)
        for claim in taken:
            item = self.items[claim.work_id]
            assert item.state == "queued" and item.lane in free
            # a lane runs its intent before its repairs
            assert not item.repair or not any(
                i.state == "queued" and not i.repair and i.lane == item.lane
                for i in self.items.values()
            )
            item.state, item.attempts, item.started = "claimed", item.attempts + 1, False
            item.token, item.expired = claim, False
            assert claim.attempt_count == item.attempts
            if start_now:
                self._start(claim)

    def _live_claims(self, *, started: bool) -> list[values.Claim]:
        return [
            i.token
            for i in self.items.values()
            if i.token is not None and i.started == started and self._live(i.token)
        ]

    def _dead_claims(self) -> list[values.Claim]:
        return self.spent + [
            i.token for i in self.items.values() if i.token is not None and i.expired
        ]

    @precondition(lambda self: bool(self._live_claims(started=False)))
    @rule(data=st.data())
    def start(self, data: st.DataObject) -> None:
        self._start(data.draw(st.sampled_from(self._live_claims(started=False))))

    def _start(self, claim: values.Claim) -> None:
        with self.app.transaction() as session:
            run = work_queue.start(session, POLICY, claim)
        assert run is not None
        item = self.items[claim.work_id]
        self._spend(item)
        item.started, item.token = True, run

    @precondition(lambda self: bool(self._dead_claims()))
    @rule(data=st.data())
    def start_a_dead_token(self, data: st.DataObject) -> None:
        claim = data.draw(st.sampled_from(self._dead_claims()))
        with self.app.transaction() as session:
            assert work_queue.start(session, POLICY, claim) is None

    @precondition(lambda self: bool(self._live_claims(started=True)))
    @rule(data=st.data())
    def renew(self, data: st.DataObject) -> None:
        claim = data.draw(st.sampled_from(self._live_claims(started=True)))
        with self.app.transaction() as session:
            renewed = work_queue.renew(session, POLICY, claim)
        assert renewed.token == claim.token

    def _write(self, claim: values.Claim, action: str) -> None:
        with self.app.transaction() as session:
            if action == "complete":
                work_queue.complete(session, claim, code="REVISION_ACTIVATED")
            elif action == "defer":
                work_queue.defer(session, POLICY, claim, code="REVISION_INCOMPLETE", delay_ms=0)
            elif action == "retry":
                work_queue.retry(session, POLICY, claim, code="DEPENDENCY_UNAVAILABLE")
            elif action == "fail":
                work_queue.fail(session, claim, code="RUNTIME_STARTUP_FAILED")
            elif action == "release":
                work_queue.release(session, claim)
            elif action == "renew":
                work_queue.renew(session, POLICY, claim)

    @precondition(lambda self: bool(self._live_claims(started=True)))
    @rule(data=st.data(), action=st.sampled_from(["complete", "defer", "retry", "fail", "release"]))
    def finish(self, data: st.DataObject, action: str) -> None:
        claim = data.draw(st.sampled_from(self._live_claims(started=True)))
        self._write(claim, action)
        item = self.items[claim.work_id]
        self._spend(item)
        if action == "complete":
            item.state = "succeeded"
        elif action == "fail":
            item.state = "failed_permanent"
        elif action in ("defer", "release"):
            item.state, item.attempts = "queued", max(item.attempts - 1, 0)
        elif item.attempts >= POLICY.max_attempts:
            item.state = "failed_permanent"
        else:
            item.state = "queued"
            self._available_now(claim.work_id)

    @precondition(lambda self: bool(self._live_claims(started=False)))
    @rule(data=st.data())
    def release_a_dispatch(self, data: st.DataObject) -> None:
        claim = data.draw(st.sampled_from(self._live_claims(started=False)))
        self._write(claim, "release")
        item = self.items[claim.work_id]
        self._spend(item)
        item.state, item.attempts = "queued", max(item.attempts - 1, 0)

    @precondition(lambda self: bool(self._dead_claims()))
    @rule(
        data=st.data(),
        action=st.sampled_from(["complete", "defer", "retry", "fail", "release", "renew"]),
    )
    def write_with_a_dead_token(self, data: st.DataObject, action: str) -> None:
        claim = data.draw(st.sampled_from(self._dead_claims()))
        with pytest.raises(errors.ClaimLost):
            self._write(claim, action)

    @precondition(
        lambda self: bool(self._live_claims(started=True) + self._live_claims(started=False))
    )
    @rule(data=st.data())
    def expire(self, data: st.DataObject) -> None:
        claim = data.draw(
            st.sampled_from(self._live_claims(started=True) + self._live_claims(started=False))
        )
        with self.owner.transaction() as session:
            session.execute(
                sa.text(
                    "UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - "
                    "interval '1 s' WHERE id = :id"
                ),
                {"id": claim.work_id},
            )
        self.items[claim.work_id].expired = True

    @precondition(lambda self: any(i.expired for i in self.items.values()))
    @rule()
    def recover(self) -> None:
        with self.app.transaction() as session:
            report = work_queue.recover_stale(session, POLICY)
        expected_requeued, expected_failed = set(), set()
        for work_id, item in self.items.items():
            if item.state != "claimed" or not item.expired:
                continue
            self._spend(item)
            item.expired = False
            if not item.started:
                item.state, item.attempts = "queued", max(item.attempts - 1, 0)
                expected_requeued.add(work_id)
            elif item.attempts >= POLICY.max_attempts:
                item.state = "failed_permanent"
                expected_failed.add(work_id)
            else:
                item.state = "queued"
                expected_requeued.add(work_id)
                self._available_now(work_id)
        assert set(report.requeued) == expected_requeued
        assert set(report.failed) == expected_failed
        assert report.exhausted == ()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def database_matches_model(self) -> None:
        if not self.items:
            return
        with self.app.transaction() as session:
            actual = {
                row.id: (row.state, row.attempt_count)
                for row in session.execute(
                    sa.text("SELECT id, state, attempt_count FROM occ.controller_work")
                )
            }
        assert actual == {k: (v.state, v.attempts) for k, v in self.items.items()}
        claimed = [i.lane for i in self.items.values() if i.state == "claimed"]
        assert len(claimed) == len(set(claimed))


@pytest.mark.timeout(600)
def test_queue_matches_its_model(
    database_urls: databases.DatabaseUrls, db: Database, owner_db: Database
) -> None:
    QueueMachine.app, QueueMachine.owner, QueueMachine.urls = db, owner_db, database_urls
    machine_settings = settings(
        max_examples=40,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    QueueMachine.TestCase.settings = machine_settings
    QueueMachine.TestCase().runTest()
