"""A repair (the maintenance pass of ``revision.run_pass``): it observes the active revision,
repairs it, records what it saw, looks again at a runtime on its way back at spacing-out delays
for at most one observation interval, and never stops or retires it (a revision that needs
stopped predecessors gets them stopped before it is prepared and published)."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.reconcile import outcome
from occ.reconcile import revision_store as revision_store_module
from occ.state import runtime_observations
from tests.support import fake_driver, revision_store, scenarios
from tests.unit.reconcile import passes

Code = codes.Code
Outcome = codes.Outcome
READY = runtime_observations.RuntimeStatus.READY
DEGRADED = runtime_observations.RuntimeStatus.DEGRADED
SECOND = 1_000_000
"""The second the repair was admitted in."""
INTERVAL_S = 60


def _repair(*, age_s: float = 1.0) -> passes.Harness:
    """A repair of revision 2 (active), ``age_s`` after it was admitted."""
    world = scenarios.agent(revisions=2, active=2, maintenance_bucket=SECOND)
    run = passes.harness(world, maintenance_interval_s=INTERVAL_S)
    run.clock.now_s += age_s
    return run


def _no_stop_or_retire(run: passes.Harness) -> bool:
    return run.driver.count("stop_revision") == run.driver.count("retire_revision") == 0


def test_a_healthy_active_revision_is_observed_ready() -> None:
    run = _repair()
    run.driver.script("activate_revision", base.Activation("fake://re-read"))

    result = run.run()

    assert result == outcome.success(Code.REVISION_ALREADY_ACTIVE)
    assert run.driver.calls == [("prepare_revision", run.rev(2)), ("activate_revision", run.rev(2))]
    assert run.store.agent.endpoint == "fake://re-read"
    assert run.store.observed == [
        revision_store.Observed(run.rev(2), READY, Code.REVISION_ALREADY_ACTIVE)
    ]
    assert "move_pointer" not in run.store.steps


def test_a_revision_that_is_no_longer_active_is_not_repaired() -> None:
    world = scenarios.agent(revisions=2, deploying=1, active=2, maintenance_bucket=SECOND)
    run = passes.harness(world, maintenance_interval_s=INTERVAL_S)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == []
    assert run.store.observed == []


@pytest.mark.parametrize(
    ("method", "answer"),
    [
        ("prepare_revision", base.Pending("GATEWAY_STARTING")),
        ("prepare_revision", base.TransientDriverError("GATEWAY_STARTING")),
        ("activate_revision", base.Pending("GATEWAY_STARTING")),
    ],
)
def test_a_runtime_coming_back_is_recorded_degraded_and_looked_at_again_soon(
    method: str, answer: base.Pending | base.TransientDriverError
) -> None:
    run = _repair(age_s=0.1)
    run.driver.script(method, answer)

    result = run.run()

    assert result == outcome.PassResult(
        Outcome.PENDING, Code.REVISION_INCOMPLETE, passes.RECHECK_MS
    )
    assert run.store.observed == [revision_store.Observed(run.rev(2), DEGRADED, "GATEWAY_STARTING")]
    assert _no_stop_or_retire(run)


@pytest.mark.parametrize(
    ("age_s", "expected_ms"),
    [(0.1, passes.RECHECK_MS), (2.0, 2_000), (16.0, 16_000), (59.9, 59_900)],
)
def test_the_rechecks_of_a_repair_space_out_with_its_age(age_s: float, expected_ms: int) -> None:
    run = _repair(age_s=age_s)
    run.driver.script("prepare_revision", base.Pending("GATEWAY_STARTING"))

    assert run.run().retry_in_ms == expected_ms


def test_a_repair_an_interval_old_leaves_the_runtime_to_the_observer() -> None:
    run = _repair(age_s=INTERVAL_S)
    run.driver.script("prepare_revision", base.Pending("GATEWAY_STARTING"))

    result = run.run()

    assert result == outcome.success(Code.REVISION_DEGRADED)
    assert run.store.observed == [revision_store.Observed(run.rev(2), DEGRADED, "GATEWAY_STARTING")]


def test_a_repair_checks_again_a_few_times_not_every_half_second() -> None:
    """A runtime that never comes back costs a handful of passes per repair (the spacing
    doubles with the repair's age), not one per recheck delay until the deadline."""
    run = _repair(age_s=0.0)
    passes_run = 0
    while True:
        run.driver.script("prepare_revision", base.Pending("GATEWAY_STARTING"))
        result = run.run() if passes_run == 0 else run.next_pass()
        passes_run += 1
        if result.retry_in_ms is None:
            break
        run.clock.now_s += result.retry_in_ms / 1000

    assert result.code == Code.REVISION_DEGRADED
    assert passes_run <= 10


@pytest.mark.parametrize(
    ("method", "answer", "code"),
    [
        ("prepare_revision", base.Failed("GATEWAY_EXITED", permanent=False), "GATEWAY_EXITED"),
        ("prepare_revision", base.Failed("OOM_KILLED", permanent=True), "OOM_KILLED"),
        ("prepare_revision", base.PermanentDriverError("IMAGE_GONE"), "IMAGE_GONE"),
        (
            "prepare_revision",
            fake_driver.Invalid("not an observation"),
            Code.INVALID_DRIVER_OBSERVATION,
        ),
        ("activate_revision", base.Failed("ALIAS_LOST", permanent=False), "ALIAS_LOST"),
        ("activate_revision", base.TransientDriverError("API_DOWN"), "API_DOWN"),
    ],
)
def test_an_unhealthy_runtime_is_recorded_degraded_never_retired(
    method: str, answer: fake_driver.Step | fake_driver.Invalid, code: str
) -> None:
    run = _repair()
    run.driver.script(method, answer)

    result = run.run()

    assert result == outcome.success(Code.REVISION_DEGRADED)
    assert run.store.observed == [revision_store.Observed(run.rev(2), DEGRADED, code)]
    assert _no_stop_or_retire(run)
    assert run.store.agent.active_revision_id == run.rev(2)


def test_a_newer_admitted_deploy_supersedes_maintenance_without_compute() -> None:
    world = scenarios.agent(
        revisions=2, deploying=1, active=1, maintenance_bucket=SECOND, admitted=(2,)
    )
    run = passes.harness(
        world, maintenance_interval_s=INTERVAL_S, requires_stopped_predecessors=True
    )

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == []
    assert run.store.observed == []


def test_a_deploy_admitted_while_maintenance_prepares_stops_it_before_activation() -> None:
    world = scenarios.agent(revisions=2, deploying=1, active=1, maintenance_bucket=SECOND)
    run = passes.harness(
        world, maintenance_interval_s=INTERVAL_S, requires_stopped_predecessors=True
    )

    def admitted_meanwhile(operation: base.Operation) -> base.Ready:
        run.store.admit(2)
        return base.Ready()

    run.driver.script("prepare_revision", admitted_meanwhile)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == [("prepare_revision", run.rev(1))]
    assert run.store.observed == []


def test_a_failed_revisions_runtime_is_retired_audited_without_its_credential() -> None:
    world = scenarios.agent(revisions=2, deploying=2, active=1, maintenance_bucket=SECOND)
    run = passes.harness(world, maintenance_interval_s=INTERVAL_S, retiring=True)

    result = run.run()

    assert result == outcome.success(Code.REVISION_RETIRED)
    assert run.driver.calls == [("retire_revision", run.rev(2))]
    assert [spec.credential for _, spec in run.driver.specs] == [None]
    assert [(a.action, a.resource_id) for a in run.store.audits] == [
        (revision_store_module.RETIRE_ACTION, run.rev(2))
    ]
    assert run.store.steps == ["load", "refresh", "publish_retirement"]


def test_a_retirement_never_retires_the_active_revision() -> None:
    world = scenarios.agent(revisions=2, active=2, maintenance_bucket=SECOND)
    run = passes.harness(world, maintenance_interval_s=INTERVAL_S, retiring=True)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == []


def test_a_retirement_that_loses_its_claim_retires_nothing() -> None:
    world = scenarios.agent(revisions=2, active=1, maintenance_bucket=SECOND)
    run = passes.harness(world, maintenance_interval_s=INTERVAL_S, retiring=True, lose_at_renewal=1)

    with pytest.raises(errors.ClaimLost):
        run.run()

    assert run.driver.calls == []
    assert run.store.audits == []


def test_a_repair_of_a_revision_needing_stopped_predecessors_stops_them_before_publishing() -> None:
    world = scenarios.agent(revisions=3, active=3, maintenance_bucket=SECOND)
    run = passes.harness(
        world, maintenance_interval_s=INTERVAL_S, requires_stopped_predecessors=True
    )

    result = run.run()

    assert result == outcome.success(Code.REVISION_ALREADY_ACTIVE)
    effects = [step for step in run.journal if not step[0].startswith("store.")]
    assert effects == [
        ("stop_revision", run.rev(1)),
        ("stop_revision", run.rev(2)),
        ("prepare_revision", run.rev(3)),
        ("activate_revision", run.rev(3)),
    ]
    assert run.journal[-1] == ("store.publish_activation", run.rev(3))
    assert run.driver.count("retire_revision") == 0


def test_a_repair_whose_predecessor_will_not_stop_publishes_nothing() -> None:
    world = scenarios.agent(revisions=2, active=2, maintenance_bucket=SECOND)
    run = passes.harness(
        world, maintenance_interval_s=INTERVAL_S, requires_stopped_predecessors=True
    )
    run.driver.script(
        "stop_revision", base.TransientDriverError("STOP_TIMEOUT"), subject=run.rev(1)
    )

    result = run.run()

    assert result.outcome == Outcome.RETRY
    assert run.driver.calls == [("stop_revision", run.rev(1))]
    assert "publish_activation" not in run.store.steps
