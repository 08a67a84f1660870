"""The deploy pass of ``revision.run_pass`` from a ready revision on, branch by branch, on the
in-memory fakes: activation order around the pointer, races, resumption, retirement, the
convergence deadline and the first maintenance bucket."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import outcome
from occ.state import values
from tests.support import fake_driver, revision_store, scenarios
from tests.unit.reconcile import passes

Code = codes.Code
Outcome = codes.Outcome
BEFORE, AFTER = base.ActivationOrder.BEFORE_COMMIT, base.ActivationOrder.AFTER_COMMIT


def test_after_commit_moves_the_pointer_before_activating() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2), activation_order=AFTER)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.SUCCESS, Code.REVISION_ACTIVATED)
    new = run.rev(3)
    assert run.journal == [
        ("store.load", new),
        ("prepare_revision", new),
        ("store.move_pointer", new),
        ("activate_revision", new),
        ("retire_revision", run.rev(1)),
        ("retire_revision", run.rev(2)),
        ("store.publish_activation", new),
    ]
    assert (run.store.agent.active_revision_id, run.store.agent.endpoint) == (new, f"fake://{new}")
    [audit] = run.store.audits
    assert audit.details == {
        "reasonCode": Code.REVISION_ACTIVATED,
        "previousRevisionId": run.rev(2),
    }


def test_a_deploy_stops_and_retires_only_the_revisions_not_retired_yet() -> None:
    run = passes.harness(scenarios.agent(revisions=4, active=3), requires_stopped_predecessors=True)
    run.store.retired.update({run.rev(1), run.rev(2)})  # retired by the deploys after them

    assert run.run().code == Code.REVISION_ACTIVATED
    assert [call for call in run.driver.calls if call[0] != "prepare_revision"] == [
        ("stop_revision", run.rev(3)),
        ("activate_revision", run.rev(4)),
        ("retire_revision", run.rev(3)),
    ]
    assert run.store.retired == {run.rev(1), run.rev(2), run.rev(3)}


def test_a_repair_records_no_retirement() -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=2, maintenance_bucket=1))

    assert run.run().code == Code.REVISION_ALREADY_ACTIVE
    assert ("store.publish_activation", run.rev(2)) in run.journal
    assert run.driver.count("retire_revision") == 0
    assert run.store.retired == set()


def test_before_commit_activates_then_moves_the_pointer_then_activates_again() -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=1), activation_order=BEFORE)

    assert run.run().code == Code.REVISION_ACTIVATED
    new = run.rev(2)
    assert run.journal == [
        ("store.load", new),
        ("prepare_revision", new),
        ("activate_revision", new),
        ("store.move_pointer", new),
        ("activate_revision", new),
        ("retire_revision", run.rev(1)),
        ("store.publish_activation", new),
    ]


@pytest.mark.parametrize(
    ("early", "expected"),
    [
        (base.Pending("switching"), (Outcome.PENDING, Code.REVISION_INCOMPLETE)),
        (
            base.Failed(Code.ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, permanent=True),
            (Outcome.PERMANENT, Code.ROLLOUT_PROGRESS_DEADLINE_EXCEEDED),
        ),
        (
            base.TransientDriverError("API_TIMEOUT"),
            (Outcome.PENDING, Code.REVISION_FINALIZATION_INCOMPLETE),
        ),
    ],
)
def test_an_unfinished_early_activation_leaves_the_pointer_alone(
    early: base.Pending | base.Failed | base.TransientDriverError, expected: tuple[Outcome, Code]
) -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=1), activation_order=BEFORE)
    run.driver.script("activate_revision", early)

    result = run.run()

    assert (result.outcome, result.code) == expected
    assert "move_pointer" not in run.store.steps
    assert run.store.agent.active_revision_id == run.rev(1)
    assert run.driver.count("retire_revision") == 0


def test_a_pointer_race_retries_with_active_revision_changed() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=1))
    run.store.before("move_pointer", revision_store.activated(run.rev(2)))

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.RETRY, Code.ACTIVE_REVISION_CHANGED)
    assert run.driver.calls == [("prepare_revision", run.rev(3))]
    assert run.store.agent.active_revision_id == run.rev(2)


def test_a_pointer_that_finds_the_agent_stopped_takes_the_stopped_branch() -> None:
    run = passes.harness(scenarios.agent(revisions=2))
    run.store.before("move_pointer", revision_store.stopped)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.SUCCESS, Code.REVISION_STOPPED)
    assert run.driver.calls == [
        ("prepare_revision", run.rev(2)),
        ("stop_revision", run.rev(2)),
        ("retire_revision", run.rev(1)),
    ]
    assert run.store.agent.active_revision_id is None
    assert run.store.audits == []


@pytest.mark.parametrize("order", [AFTER, BEFORE])
def test_an_already_active_revision_resumes_at_activation(order: base.ActivationOrder) -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=2), activation_order=order)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.SUCCESS, Code.REVISION_ALREADY_ACTIVE)
    assert run.driver.calls == [
        ("prepare_revision", run.rev(2)),
        ("activate_revision", run.rev(2)),
        ("retire_revision", run.rev(1)),
    ]
    assert "move_pointer" not in run.store.steps


def test_a_pending_activation_defers_and_the_next_pass_resumes() -> None:
    run = passes.redeploy("activate_revision", base.Pending("rolling out"))

    first = run.run()
    assert first == outcome.PassResult(Outcome.PENDING, Code.REVISION_INCOMPLETE, passes.RECHECK_MS)
    assert run.store.agent.active_revision_id == run.rev(2)  # the pointer moved already
    assert run.store.agent.endpoint == f"fake://{run.rev(1)}"  # but nothing was published

    second = run.next_pass()
    assert (second.outcome, second.code) == (Outcome.SUCCESS, Code.REVISION_ALREADY_ACTIVE)
    assert run.store.steps.count("move_pointer") == 1
    assert run.store.agent.endpoint == f"fake://{run.rev(2)}"
    assert len(run.store.audits) == 1


@pytest.mark.parametrize(
    "failure",
    [
        base.Failed(Code.ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, permanent=True),
        base.PermanentDriverError(Code.ROLLOUT_PROGRESS_DEADLINE_EXCEEDED),
    ],
)
def test_a_permanent_activation_failure_fails_with_the_drivers_code(
    failure: base.Failed | base.PermanentDriverError,
) -> None:
    run = passes.redeploy("activate_revision", failure)

    result = run.run()

    assert (result.outcome, result.code) == (
        Outcome.PERMANENT,
        Code.ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
    )
    assert run.driver.count("retire_revision") == 0


@pytest.mark.parametrize(
    "transient", [base.Failed("API_TIMEOUT", permanent=False), base.TransientDriverError("X")]
)
def test_a_transient_activation_failure_leaves_finalization_incomplete(
    transient: base.Failed | base.TransientDriverError,
) -> None:
    run = passes.redeploy("activate_revision", transient)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.PENDING, Code.REVISION_FINALIZATION_INCOMPLETE)
    assert run.store.row.attempt_count == 0  # refunded
    assert run.driver.count("retire_revision") == 0


@pytest.mark.parametrize("answer", [base.Ready(), "fake://x", None])
def test_an_activation_that_is_not_an_activation_publishes_no_endpoint(answer: object) -> None:
    run = passes.redeploy("activate_revision", fake_driver.Invalid(answer))

    result = run.run()

    assert result.outcome != Outcome.SUCCESS
    assert "publish_activation" not in run.store.steps
    assert run.store.agent.endpoint == f"fake://{run.rev(1)}"


@pytest.mark.parametrize(
    "failure", [base.TransientDriverError("ENGINE_BUSY"), base.PermanentDriverError("GONE")]
)
def test_a_retirement_failure_after_the_pointer_moved_is_finished_by_the_next_pass(
    failure: base.DriverError,
) -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2))
    run.driver.script("retire_revision", failure, subject=run.rev(1))

    first = run.run()
    assert (first.outcome, first.code) == (Outcome.PENDING, Code.REVISION_FINALIZATION_INCOMPLETE)
    assert run.store.agent.active_revision_id == run.rev(3)
    assert ("retire_revision", run.rev(2)) not in run.driver.calls

    second = run.next_pass()
    assert second.code == Code.REVISION_ALREADY_ACTIVE
    assert run.driver.calls[-2:] == [
        ("retire_revision", run.rev(1)),
        ("retire_revision", run.rev(2)),
    ]


def test_the_convergence_deadline_fails_a_revision_that_stays_pending() -> None:
    policy = values.QueuePolicy(convergence_timeout_ms=60_000)
    run = passes.harness(policy=policy)
    run.driver.script("prepare_revision", *[base.Pending("starting")] * 3)

    assert run.run().code == Code.REVISION_INCOMPLETE
    run.clock.advance(59.999)
    assert run.next_pass().code == Code.REVISION_INCOMPLETE
    run.clock.advance(0.001)  # created + timeout: the deadline has passed
    result = run.next_pass()

    assert (result.outcome, result.code) == (Outcome.PERMANENT, Code.CONVERGENCE_DEADLINE_EXCEEDED)
    assert run.store.row.result_data == {"timeoutMs": 60_000}
    assert run.driver.count("prepare_revision") == 3 and run.driver.count("activate_revision") == 0


def test_a_throttled_activation_waits_as_asked_instead_of_backing_off() -> None:
    run = passes.redeploy(
        "activate_revision", base.TransientDriverError("TOO_MANY_REQUESTS", retry_after_s=4.0)
    )

    assert run.run() == outcome.PassResult(Outcome.PENDING, Code.REVISION_INCOMPLETE, 4_000)
