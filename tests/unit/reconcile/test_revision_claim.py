"""``revision.run_pass`` under its claim: every Compute call follows a fresh renewal, and a pass
that loses its claim anywhere publishes nothing and calls Compute no more."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.state import values
from tests.support import scenarios
from tests.unit.reconcile import passes

BEFORE = base.ActivationOrder.BEFORE_COMMIT


def test_every_compute_call_follows_a_fresh_renewal() -> None:
    run = passes.harness(
        scenarios.agent(revisions=3, active=2),
        activation_order=BEFORE,
        requires_stopped_predecessors=True,
        journal_renewals=True,
    )

    run.run()

    compute = [i for i, (step, _) in enumerate(run.journal) if step in _COMPUTE]
    assert len(compute) == 7  # stop x2, prepare, activate x2, retire x2
    assert all(run.journal[i - 1][0] == "renew" for i in compute)
    assert run.guard.renewals == 7


_COMPUTE = {"stop_revision", "prepare_revision", "activate_revision", "retire_revision"}


@pytest.mark.parametrize("lost_at", [1, 2, 3, 4, 5])
def test_a_claim_lost_at_a_renewal_ends_the_pass_before_that_effect(lost_at: int) -> None:
    run = passes.harness(
        scenarios.agent(revisions=3, active=2), activation_order=BEFORE, lose_at_renewal=lost_at
    )
    new, old = run.rev(3), run.rev(2)
    effects = [
        ("prepare_revision", new),
        ("activate_revision", new),
        ("activate_revision", new),  # after the pointer moved
        ("retire_revision", run.rev(1)),
        ("retire_revision", old),
    ]

    with pytest.raises(errors.ClaimLost):
        run.run()

    assert run.driver.calls == effects[: lost_at - 1]
    assert run.store.result is None and run.store.row.state == values.WorkState.CLAIMED
    assert run.store.audits == []
    assert run.store.agent.endpoint == f"fake://{old}"
    # the pointer moves between the two activations, in a transaction the live claim fenced
    assert run.store.agent.active_revision_id == (new if lost_at >= 3 else old)


def test_a_claim_lost_before_stopping_predecessors_stops_nothing() -> None:
    run = passes.harness(
        scenarios.agent(revisions=2, active=1),
        requires_stopped_predecessors=True,
        lose_at_renewal=1,
    )

    with pytest.raises(errors.ClaimLost):
        run.run()

    assert run.driver.calls == []


def test_a_claim_lost_while_the_driver_works_aborts_the_call_and_publishes_nothing() -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=1))
    # the watch finds the claim gone while prepare runs; the driver sees the abort event
    run.driver.script("prepare_revision", lambda operation: run.guard.lose())

    with pytest.raises(base.Aborted):
        run.run()

    assert run.driver.calls == [("prepare_revision", run.rev(2))]
    assert run.store.steps == ["load"]
    assert run.store.agent.active_revision_id == run.rev(1)


def test_a_driver_error_while_stopping_predecessors_is_a_retry_with_nothing_published() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2), requires_stopped_predecessors=True)
    run.driver.script("stop_revision", base.TransientDriverError("ENGINE_BUSY"), subject=run.rev(1))

    result = run.run()

    assert (result.outcome, result.code) == (codes.Outcome.RETRY, codes.Code.DEPENDENCY_UNAVAILABLE)
    assert run.driver.calls == [("stop_revision", run.rev(1))]  # nothing prepared or activated
