"""One revision pass wired to the in-memory fakes, for the unit tests of ``revision.run_pass``.

``harness()`` builds a scenario's store, a fake driver with the given capabilities and a fake
claim guard, all journalling into one list; ``Harness.run()`` runs one pass over them. Nothing
here touches a database, a thread or the real clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import outcome, revision
from occ.state import values, work_keys
from tests.support import claim_guard, clock, fake_driver, revision_store, scenarios

RECHECK_MS = 500
"""The unready recheck delay every harness pass runs with."""

Code = codes.Code


@dataclass
class Harness:
    world: scenarios.Scenario
    driver: fake_driver.FakeComputeDriver
    store: revision_store.InMemoryRevisionStore
    clock: clock.ManualClock
    journal: list[tuple[str, str]] = field(default_factory=list)
    """Driver calls and store steps (``store.<step>``) as they happened."""

    @property
    def guard(self) -> claim_guard.FakeClaimGuard:
        return self.store.guard

    def rev(self, number: int) -> str:
        """The id of revision ``number``."""
        return self.world.numbered(number).id

    def run(self) -> outcome.PassResult:
        """One pass over the scenario's item (a maintenance pass for a maintenance key)."""
        return revision.run_pass(
            self.store,
            self.driver,
            self.store.guard,
            maintenance=self.world.key.kind == work_keys.WorkKind.REVISION_MAINTENANCE,
            unready_recheck_ms=RECHECK_MS,
        )

    def next_pass(self, *, lose_at_renewal: int | None = None) -> outcome.PassResult:
        """Claim the requeued item again and run the pass."""
        self.store.next_pass(
            claim_guard.FakeClaimGuard(str(self.world.key), lose_at_renewal=lose_at_renewal)
        )
        return self.run()


def harness(
    world: scenarios.Scenario | None = None,
    *,
    activation_order: base.ActivationOrder = base.ActivationOrder.AFTER_COMMIT,
    requires_stopped_predecessors: bool = False,
    maintenance_interval_s: float | None = None,
    lose_at_renewal: int | None = None,
    refusal: Code | None = None,
    retiring: bool = False,
    policy: values.QueuePolicy | None = None,
    journal_renewals: bool = False,
) -> Harness:
    """A pass over ``world`` (one fresh revision by default) with these driver capabilities."""
    world = world or scenarios.agent()
    journal: list[tuple[str, str]] = []
    manual = clock.ManualClock()
    driver = fake_driver.FakeComputeDriver(
        activation_order=activation_order,
        requires_stopped_predecessors=requires_stopped_predecessors,
        maintenance_interval_s=maintenance_interval_s,
        journal=journal,
    )
    guard = claim_guard.FakeClaimGuard(
        str(world.key),
        lose_at_renewal=lose_at_renewal,
        journal=journal if journal_renewals else None,
    )
    store = revision_store.InMemoryRevisionStore(
        world,
        driver,
        guard,
        clock=manual,
        policy=policy,
        refusal=refusal,
        retiring=retiring,
        journal=journal,
    )
    return Harness(world, driver, store, manual, journal)


def redeploy(method: str, *answers: fake_driver.Step | fake_driver.Invalid) -> Harness:
    """A pass deploying revision 2 of an Agent running revision 1, the driver giving ``answers``
    to ``method`` (one a call) before its defaults."""
    run = harness(scenarios.agent(revisions=2, active=1))
    run.driver.script(method, *answers)
    return run
