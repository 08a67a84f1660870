"""The maintenance pass of ``revision.run_pass``: it observes the active revision, repairs it,
records what it saw, schedules the next bucket, and never stops or retires anything."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import outcome
from occ.state import runtime_observations, values
from tests.support import fake_driver, revision_store, scenarios
from tests.unit.reconcile import passes

Code = codes.Code
Outcome = codes.Outcome
READY = runtime_observations.RuntimeStatus.READY
DEGRADED = runtime_observations.RuntimeStatus.DEGRADED
BUCKET = 16_667
"""The bucket the maintained item is for: it begins at 1_000_020 s."""


def _maintenance(policy: values.QueuePolicy | None = None) -> passes.Harness:
    world = scenarios.agent(revisions=2, active=2, maintenance_bucket=BUCKET)
    run = passes.harness(world, maintenance_interval_s=60, policy=policy)
    run.clock.now_s = 1_000_021.0  # one second into the bucket
    return run


def _no_stop_or_retire(run: passes.Harness) -> bool:
    return run.driver.count("stop_revision") == run.driver.count("retire_revision") == 0


def test_a_healthy_active_revision_is_observed_ready_and_the_chain_goes_on() -> None:
    run = _maintenance()
    run.driver.script("activate_revision", base.Activation("fake://re-read"))

    result = run.run()

    assert result == outcome.success(Code.REVISION_ALREADY_ACTIVE)
    assert run.driver.calls == [("prepare_revision", run.rev(2)), ("activate_revision", run.rev(2))]
    assert run.store.agent.endpoint == "fake://re-read"
    assert run.store.observed == [
        revision_store.Observed(run.rev(2), READY, Code.REVISION_ALREADY_ACTIVE)
    ]
    [scheduled] = run.store.scheduled
    assert scheduled.key.maintenance_bucket == BUCKET + 1
    assert "move_pointer" not in run.store.steps


def test_a_revision_that_is_no_longer_active_ends_its_chain_without_compute() -> None:
    world = scenarios.agent(revisions=2, deploying=1, active=2, maintenance_bucket=BUCKET)
    run = passes.harness(world, maintenance_interval_s=60)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == []
    assert run.store.scheduled == [] and run.store.observed == []


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
    run = _maintenance()
    run.driver.script(method, answer)

    result = run.run()

    assert result == outcome.PassResult(
        Outcome.PENDING, Code.REVISION_INCOMPLETE, passes.RECHECK_MS
    )
    assert run.store.observed == [revision_store.Observed(run.rev(2), DEGRADED, "GATEWAY_STARTING")]
    assert run.store.scheduled == []  # this item runs again itself
    assert _no_stop_or_retire(run)


@pytest.mark.parametrize(
    ("method", "answer", "reason"),
    [
        ("prepare_revision", base.Failed("GATEWAY_EXITED", permanent=True), "GATEWAY_EXITED"),
        ("prepare_revision", base.Failed("OOM_KILLED", permanent=False), "OOM_KILLED"),
        ("prepare_revision", base.PermanentDriverError("IMAGE_GONE"), "IMAGE_GONE"),
        ("prepare_revision", fake_driver.Invalid("ready"), Code.INVALID_DRIVER_OBSERVATION),
        ("activate_revision", base.Failed("ALIAS_LOST", permanent=True), "ALIAS_LOST"),
        ("activate_revision", base.TransientDriverError("API_DOWN"), "API_DOWN"),
    ],
)
def test_an_unhealthy_runtime_is_recorded_degraded_never_retired(
    method: str, answer: fake_driver.Step | fake_driver.Invalid, reason: str
) -> None:
    run = _maintenance()
    run.driver.script(method, answer)

    result = run.run()

    assert result == outcome.success(Code.REVISION_DEGRADED)
    assert run.store.observed == [revision_store.Observed(run.rev(2), DEGRADED, reason)]
    assert [s.key.maintenance_bucket for s in run.store.scheduled] == [BUCKET + 1]
    assert run.store.agent.active_revision_id == run.rev(2)
    assert _no_stop_or_retire(run)


def test_a_runtime_pending_past_the_deadline_fails_the_item_but_the_chain_goes_on() -> None:
    run = _maintenance(policy=values.QueuePolicy(convergence_timeout_ms=1_000))
    run.driver.script("prepare_revision", base.Pending("GATEWAY_STARTING"))
    run.clock.advance(1.0)

    result = run.run()

    assert (result.outcome, result.code) == (Outcome.PERMANENT, Code.CONVERGENCE_DEADLINE_EXCEEDED)
    assert [s.key.maintenance_bucket for s in run.store.scheduled] == [BUCKET + 1]
    assert _no_stop_or_retire(run)


@pytest.mark.parametrize(
    ("now_s", "expected"),
    [
        (1_000_021.0, BUCKET + 1),  # inside the bucket: the next one
        (1_000_000.0, BUCKET + 1),  # early (before the bucket began): still after it
        (1_000_500.0, 16_676),  # late: the next boundary after now, skipping the missed ones
    ],
)
def test_the_next_bucket_is_after_the_running_one_and_after_now(
    now_s: float, expected: int
) -> None:
    run = _maintenance()
    run.clock.now_s = now_s

    run.run()

    [scheduled] = run.store.scheduled
    assert scheduled.key.maintenance_bucket == expected
    assert expected * 60 > now_s and expected > BUCKET
    assert scheduled.delay_ms == round((expected * 60 - now_s) * 1000)


def test_a_newer_admitted_deploy_supersedes_maintenance_without_compute() -> None:
    world = scenarios.agent(
        revisions=2, deploying=1, active=1, maintenance_bucket=BUCKET, admitted=(2,)
    )
    run = passes.harness(world, maintenance_interval_s=60, requires_stopped_predecessors=True)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == []
    assert run.store.scheduled == [] and run.store.observed == []


def test_a_deploy_admitted_while_maintenance_prepares_stops_it_before_activation() -> None:
    world = scenarios.agent(revisions=2, deploying=1, active=1, maintenance_bucket=BUCKET)
    run = passes.harness(world, maintenance_interval_s=60, requires_stopped_predecessors=True)

    def admitted_meanwhile(operation: base.Operation) -> base.Ready:
        run.store.admit(2)
        return base.Ready()

    run.driver.script("prepare_revision", admitted_meanwhile)

    result = run.run()

    assert result == outcome.success(Code.REVISION_MAINTENANCE_SUPERSEDED)
    assert run.driver.calls == [("prepare_revision", run.rev(1))]
    assert run.store.scheduled == [] and run.store.observed == []
