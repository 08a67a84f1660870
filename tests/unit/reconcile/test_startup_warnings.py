"""A runtime's startup warnings: judged, then carried by a deploy's success, never by a repair."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import startup_warnings
from tests.support import scenarios
from tests.unit.reconcile import passes

Code = codes.Code
W = base.StartupWarning


def test_well_formed_warnings_are_kept_in_the_runtimes_order() -> None:
    warnings = [W("PLUGIN_UNAVAILABLE", "voice-call"), W("CONFIGURATION_IGNORED", "plugins")]

    assert startup_warnings.judged(warnings) == (
        {"code": "PLUGIN_UNAVAILABLE", "detail": "voice-call"},
        {"code": "CONFIGURATION_IGNORED", "detail": "plugins"},
    )
    assert startup_warnings.judged([]) == ()


@pytest.mark.parametrize(
    "warnings",
    [
        [W("plugin failed", "x")],
        [W("PLUGIN_UNAVAILABLE", "")],
        [W("PLUGIN_UNAVAILABLE", "a\nb")],
        [W("PLUGIN_UNAVAILABLE", "x" * 201)],
        [W("PLUGIN_UNAVAILABLE", "x"), W("PLUGIN_UNAVAILABLE", "x")],
        [W("PLUGIN_UNAVAILABLE", f"p{n}") for n in range(65)],
    ],
)
def test_malformed_warnings_are_refused(warnings: list[base.StartupWarning]) -> None:
    assert startup_warnings.judged(warnings) is None


def test_a_deploys_success_carries_the_warnings_its_runtime_reported() -> None:
    run = passes.harness()
    run.driver.script("prepare_revision", base.Ready({}, (W("PLUGIN_UNAVAILABLE", "memory"),)))

    result = run.run()

    assert result.code == Code.REVISION_ACTIVATED
    assert run.store.warnings == ({"code": "PLUGIN_UNAVAILABLE", "detail": "memory"},)


def test_malformed_warnings_fail_the_deploy_before_activation() -> None:
    run = passes.harness()
    run.driver.script("prepare_revision", base.Ready({}, (W("bad code", "memory"),)))

    result = run.run()

    assert (result.outcome, result.code) == (
        codes.Outcome.PERMANENT,
        Code.INVALID_DRIVER_OBSERVATION,
    )
    assert run.driver.count("activate_revision") == 0


def test_a_repair_publishes_no_warnings() -> None:
    world = scenarios.agent(revisions=1, active=1, maintenance_bucket=7)
    run = passes.harness(world, maintenance_interval_s=60)
    run.driver.script("prepare_revision", base.Ready({}, (W("PLUGIN_UNAVAILABLE", "memory"),)))

    assert run.run().code == Code.REVISION_ALREADY_ACTIVE
    assert run.store.warnings == ()


def test_a_runtime_that_starts_at_activation_reports_its_warnings_there() -> None:
    run = passes.harness()
    run.driver.script("activate_revision", base.Activation("e", (W("PLUGIN_UNAVAILABLE", "x"),)))

    assert run.run().code == Code.REVISION_ACTIVATED
    assert run.store.warnings == ({"code": "PLUGIN_UNAVAILABLE", "detail": "x"},)


def test_an_activations_warnings_replace_the_preparations() -> None:
    run = passes.harness()
    run.driver.script("prepare_revision", base.Ready({}, (W("PLUGIN_UNAVAILABLE", "memory"),)))
    run.driver.script("activate_revision", base.Activation("e", ()))

    assert run.run().code == Code.REVISION_ACTIVATED
    assert run.store.warnings == ()


def test_malformed_warnings_at_activation_fail_the_deploy_before_retirement() -> None:
    run = passes.harness(scenarios.agent(revisions=2, active=1))
    run.driver.script("activate_revision", base.Activation("e", (W("bad code", "x"),)))

    result = run.run()

    assert (result.outcome, result.code) == (
        codes.Outcome.PERMANENT,
        Code.INVALID_DRIVER_OBSERVATION,
    )
    assert run.store.warnings == ()
    assert run.driver.count("retire_revision") == 0


def test_a_repair_publishes_no_warnings_its_activation_reports() -> None:
    world = scenarios.agent(revisions=1, active=1, maintenance_bucket=7)
    run = passes.harness(world, maintenance_interval_s=60)
    run.driver.script("activate_revision", base.Activation("e", (W("PLUGIN_UNAVAILABLE", "x"),)))

    assert run.run().code == Code.REVISION_ALREADY_ACTIVE
    assert run.store.warnings == ()
