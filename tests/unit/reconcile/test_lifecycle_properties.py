"""Interleavings of deploys, repairs, stops, a deletion, dying runtimes and lost claims, as a
Hypothesis state machine over the real revision pass, the real stop and delete effects and the
fleet observer's real decision table, on an in-memory world with a fake driver and a fake clock
(``tests.support.lifecycle_world``). After every step:

* the active revision is the newest admitted one that succeeded (or one whose deployment is
  still under way, newer than every one that succeeded), never a failed one;
* no older revision's runtime was started while a newer one was the active revision that
  succeeded;
* no Compute call happened after its pass's claim was lost;

and once the queue has drained and the observer has looked once more, no runtime of a failed
or stopped revision runs, and a running Agent's active revision that succeeded runs again
(unless its repairs ran out).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from occ.drivers.compute import base
from occ.foundation import errors
from occ.reconcile import maintenance, revision
from occ.state import values
from tests.support import claim_guard, clock, lifecycle_world

POLICY = values.QueuePolicy(max_attempts=3, convergence_timeout_ms=60_000)
DRAIN_PASSES = 200
"""More passes than a drained queue ever needs (a bound, so a livelock fails the test)."""


class Lifecycle(RuleBasedStateMachine):
    world: lifecycle_world.World
    driver: lifecycle_world.WorldDriver

    @initialize(dedicated=st.booleans())
    def begin(self, dedicated: bool) -> None:
        self.world = lifecycle_world.World(clock.ManualClock(), POLICY, dedicated)
        self.driver = lifecycle_world.WorldDriver(self.world)

    # -- what people do -----------------------------------------------------------------------

    @precondition(
        lambda self: (
            not self.world.deleting and len(self.world.admitted) < lifecycle_world.MAX_REVISIONS
        )
    )
    @rule(fails=st.booleans())
    def deploy(self, fails: bool) -> None:
        self.world.deploy(fails=fails)

    @precondition(lambda self: not self.world.deleting and bool(self.world.admitted))
    @rule()
    def stop(self) -> None:
        self.world.stop()

    @precondition(lambda self: not self.world.deleting)
    @rule()
    def delete(self) -> None:
        self.world.delete()

    # -- what the system does -----------------------------------------------------------------

    @rule()
    def observe(self) -> None:
        self.world.observe(self.driver)

    @precondition(lambda self: bool(self.world.running))
    @rule(pick=st.integers(min_value=0, max_value=20))
    def a_runtime_dies(self, pick: int) -> None:
        # by revision number: the ids are random, so ordering by id would pick another
        # runtime when Hypothesis replays the example
        running = sorted(self.world.running, key=self.world.number)
        self.world.running.discard(running[pick % len(running)])

    @rule(seconds=st.sampled_from([1.0, 30.0, 61.0]))
    def time_passes(self, seconds: float) -> None:
        self.world.clock.advance(seconds)

    @precondition(lambda self: bool(self.world.live()))
    @rule(
        pick=st.integers(min_value=0, max_value=20),
        lose_at_renewal=st.none() | st.integers(min_value=1, max_value=4),
        lose_after_call=st.none() | st.integers(min_value=1, max_value=4),
    )
    def run_a_pass(
        self, pick: int, lose_at_renewal: int | None, lose_after_call: int | None
    ) -> None:
        queued = [item for item in self.world.live() if item.state == "queued"]
        if queued:
            self._run(queued[pick % len(queued)], lose_at_renewal, lose_after_call)

    @rule()
    def drain_then_observe(self) -> None:
        """Everything admitted runs to its end (no claim lost), the observer looks once more
        and what it admitted runs too: then no failed or stopped revision's runtime runs."""
        self._drain()
        self.world.observe(self.driver)
        self._drain()
        world = self.world
        failed = {r.id for r in world.admitted if world.deployment_failed(r.id)}
        assert not (failed & world.running), ("failed revisions still run", failed & world.running)
        if world.deleting or world.agent.desired_runtime_state == "stopped":
            assert world.running == set(), ("a stopped Agent still runs", world.running)
        elif world.agent.active_revision_id is not None:
            assert world.running <= {world.agent.active_revision_id}, world.running
            active = world.agent.active_revision_id
            if world.succeeded(active) and world.repairs < maintenance.MAX_REPAIRS:
                assert active in world.running, ("a dead active runtime was not repaired", active)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def no_effect_after_a_lost_claim(self) -> None:
        if not hasattr(self, "world"):
            return
        late = [effect for effect in self.world.effects if effect.claim_lost]
        assert late == [], late

    @invariant()
    def no_older_runtime_started_after_a_newer_one_is_active(self) -> None:
        if hasattr(self, "world"):
            assert self.world.older_started == []

    @invariant()
    def the_active_revision_is_the_newest_that_succeeded(self) -> None:
        if not hasattr(self, "world"):
            return
        world = self.world
        active = world.agent.active_revision_id
        if active is None:
            return
        assert not world.deployment_failed(active), "a failed revision is active"
        newest = world.newest_succeeded()
        if world.succeeded(active):
            assert newest is not None and newest.id == active, (active, newest)
        elif newest is not None:
            assert newest.revision_number < world.number(active), (active, newest)

    # -- helpers ------------------------------------------------------------------------------

    def _run(
        self,
        item: lifecycle_world.Item,
        lose_at_renewal: int | None,
        lose_after_call: int | None,
    ) -> None:
        world, driver = self.world, self.driver
        item.state, item.attempts = "claimed", item.attempts + 1
        guard = claim_guard.FakeClaimGuard(item.id, lose_at_renewal=lose_at_renewal)
        driver.guard, driver.passes_calls, world.lose_after = guard, 0, lose_after_call
        try:
            if item.kind == "stop":
                world.run_stop(item, driver, guard)
            elif item.kind == "delete":
                world.run_delete(item, driver, guard)
            else:
                maintenance = item.kind == "repair"
                revision.run_pass(
                    lifecycle_world.WorldStore(world, item, guard, maintenance=maintenance),
                    driver,
                    guard,
                    maintenance=maintenance,
                    unready_recheck_ms=500,
                )
        except (errors.ClaimLost, base.Aborted):
            world.recover(item)
        finally:
            world.lose_after = None

    def _drain(self) -> None:
        for _ in range(DRAIN_PASSES):
            queued = [item for item in self.world.live() if item.state == "queued"]
            if not queued:
                return
            self._run(queued[0], None, None)
        raise AssertionError(f"the queue never drained: {self.world.live()}")


Lifecycle.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLifecycle = Lifecycle.TestCase
