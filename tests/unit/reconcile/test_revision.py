"""The deploy pass of ``revision.run_pass`` up to a ready revision, branch by branch, on the
in-memory fakes: refusals, a stopped Agent, supersession, stopped predecessors, preparation."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import outcome
from occ.state import agents, values
from tests.support import fake_driver, scenarios
from tests.unit.reconcile import passes

Code = codes.Code
Outcome = codes.Outcome
BEFORE, AFTER = base.ActivationOrder.BEFORE_COMMIT, base.ActivationOrder.AFTER_COMMIT
STOPPED = agents.DesiredRuntimeState.STOPPED


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        (Code.INVALID_REVISION_OWNER, Outcome.PERMANENT),
        (Code.NAMESPACE_NOT_READY, Outcome.RETRY),
        (Code.REVISION_SUPERSEDED, Outcome.SUCCESS),
    ],
)
def test_a_refusal_from_load_ends_the_pass_without_compute(
    refusal: Code, expected: Outcome
) -> None:
    run = passes.harness(refusal=refusal)

    result = run.run()

    assert (result.outcome, result.code) == (expected, refusal)
    assert run.driver.calls == []
    assert run.store.steps == ["load"]


def test_a_stopped_agent_stops_the_revision_and_retires_leftovers() -> None:
    run = passes.harness(scenarios.agent(revisions=3, desired_runtime_state=STOPPED))

    result = run.run()

    assert result == outcome.success(Code.REVISION_STOPPED)
    assert run.driver.calls == [
        ("stop_revision", run.rev(3)),
        ("retire_revision", run.rev(1)),
        ("retire_revision", run.rev(2)),
    ]
    assert all(spec.credential is None for _, spec in run.driver.specs)
    assert run.store.agent.active_revision_id is None


def test_a_stopped_agent_keeps_another_active_revision() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2, desired_runtime_state=STOPPED))

    assert run.run().code == Code.REVISION_STOPPED
    assert run.driver.calls == [("stop_revision", run.rev(3))]


def test_a_repair_of_a_stopped_agent_stops_it_and_ends() -> None:
    world = scenarios.agent(
        revisions=2, active=2, desired_runtime_state=STOPPED, maintenance_bucket=7
    )
    run = passes.harness(world, maintenance_interval_s=60)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.SUCCESS, Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == [("stop_revision", run.rev(2)), ("retire_revision", run.rev(1))]


def test_a_superseded_revision_completes_without_compute() -> None:
    run = passes.harness(scenarios.agent(revisions=3, deploying=2, active=3))

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.SUCCESS, Code.REVISION_SUPERSEDED)
    assert run.driver.calls == []
    assert [a.action for a in run.store.audits] == ["agents.lifecycle.supersede"]
    assert run.store.agent.active_revision_id == run.rev(3)


def test_required_stopped_predecessors_are_stopped_before_prepare() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2), requires_stopped_predecessors=True)

    assert run.run().code == Code.REVISION_ACTIVATED
    assert run.driver.calls == [
        ("stop_revision", run.rev(1)),
        ("stop_revision", run.rev(2)),
        ("prepare_revision", run.rev(3)),
        ("activate_revision", run.rev(3)),
        ("retire_revision", run.rev(1)),
        ("retire_revision", run.rev(2)),
    ]


def test_predecessors_keep_running_through_prepare_otherwise() -> None:
    run = passes.harness(scenarios.agent(revisions=3, active=2))

    assert run.run().code == Code.REVISION_ACTIVATED
    assert run.driver.count("stop_revision") == 0
    assert run.driver.calls[0] == ("prepare_revision", run.rev(3))


def test_only_prepare_and_activate_carry_the_credential() -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=1), requires_stopped_predecessors=True)

    run.run()

    carried = {(method, spec.credential is not None) for method, spec in run.driver.specs}
    assert carried == {
        ("stop_revision", False),
        ("prepare_revision", True),
        ("activate_revision", True),
        ("retire_revision", False),
    }
    prepared = next(spec for method, spec in run.driver.specs if method == "prepare_revision")
    assert prepared.credential == run.world.credential


@pytest.mark.parametrize(
    "not_ready",
    [base.Pending("gateway starting"), base.TransientDriverError("ENGINE_BUSY", "try later")],
)
def test_a_revision_not_ready_is_deferred_without_spending_an_attempt(
    not_ready: base.Pending | base.TransientDriverError,
) -> None:
    run = passes.redeploy("prepare_revision", not_ready)

    result = run.run()

    assert result == outcome.PassResult(
        Outcome.PENDING, Code.REVISION_INCOMPLETE, passes.RECHECK_MS
    )
    assert run.store.row.attempt_count == 0 and run.store.row.state == values.WorkState.QUEUED
    assert run.driver.calls == [("prepare_revision", run.rev(2))]
    assert run.store.agent.active_revision_id == run.rev(1)


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (
            base.Failed(Code.DOCKER_GATEWAY_IMAGE_MISSING, permanent=True),
            "DOCKER_GATEWAY_IMAGE_MISSING",
        ),
        (base.Failed("GATEWAY_EXITED_3", permanent=True), "RUNTIME_STARTUP_FAILED"),
        (base.PermanentDriverError(Code.KUBERNETES_FORBIDDEN, "rbac"), "KUBERNETES_FORBIDDEN"),
        (base.PermanentDriverError("NOT_OCCS_CODE"), "RUNTIME_STARTUP_FAILED"),
        (base.PermanentDriverError("SSH_HOST_REMOVED", "gone"), "SSH_HOST_REMOVED"),
        (base.PermanentDriverError("SANDBOX_POLICY_MISSING"), "SANDBOX_POLICY_MISSING"),
    ],
)
def test_a_permanent_prepare_failure_fails_the_item(
    failure: base.Failed | base.PermanentDriverError, expected: str
) -> None:
    run = passes.redeploy("prepare_revision", failure)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.PERMANENT, expected)
    assert run.store.row.state == values.WorkState.FAILED_PERMANENT
    assert run.driver.calls == [("prepare_revision", run.rev(2))]


def test_a_transient_prepare_failure_retries_spending_the_attempt() -> None:
    run = passes.harness(policy=values.QueuePolicy(max_attempts=2))
    run.driver.script("prepare_revision", base.Failed("OOM", permanent=False))
    run.driver.script("prepare_revision", base.Failed("OOM", permanent=False))

    first = run.run()
    assert (first.outcome, first.code) == (Outcome.RETRY, Code.DEPENDENCY_UNAVAILABLE)
    assert run.store.row.attempt_count == 1

    last = run.next_pass()  # the second attempt is the last one
    assert (last.outcome, last.code) == (Outcome.PERMANENT, Code.DEPENDENCY_UNAVAILABLE)
    assert run.driver.count("activate_revision") == 0


@pytest.mark.parametrize("answer", [base.Activation("fake://x"), "ready", None])
def test_an_invalid_prepare_observation_fails_the_item(answer: object) -> None:
    run = passes.harness()
    run.driver.script("prepare_revision", fake_driver.Invalid(answer))

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.PERMANENT, Code.INVALID_DRIVER_OBSERVATION)
    assert run.driver.count("activate_revision") == 0
    assert run.store.agent.active_revision_id is None


@pytest.mark.parametrize(
    ("not_ready", "delay_ms"),
    [
        (base.Pending("throttled", retry_after_s=2.0), 2_000),
        (base.TransientDriverError("TOO_MANY_REQUESTS", retry_after_s=3.5), 3_500),
        (base.Pending("throttled", retry_after_s=0.1), passes.RECHECK_MS),
    ],
)
def test_a_dependency_that_asks_to_wait_longer_is_left_alone_that_long(
    not_ready: base.Pending | base.TransientDriverError, delay_ms: int
) -> None:
    run = passes.harness()
    run.driver.script("prepare_revision", not_ready)

    assert run.run() == outcome.PassResult(Outcome.PENDING, Code.REVISION_INCOMPLETE, delay_ms)
