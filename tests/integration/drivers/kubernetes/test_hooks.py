"""Lifecycle hooks through the ``kubernetes`` driver, against the fake API server: the seeds'
call points, compensation of a failed activation, and a failed revocation that keeps the
gateway.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pytest

from occ.drivers.compute import base, hooks
from occ.drivers.compute.kubernetes import KubernetesComputeDriver
from tests.integration.drivers.kubernetes import helpers
from tests.integration.drivers.kubernetes.conftest import MakeDriver
from tests.support.hook_owners import RecordingOwner
from tests.support.kube_api import FakeKubeAPI

PLACEHOLDER = {"RUNTIME_IDENTITY": "opaque-identity:test-1"}


class Hooked(NamedTuple):
    """A driver whose one hook owner records its calls."""

    driver: KubernetesComputeDriver
    owner: RecordingOwner


@pytest.fixture
def hooked(make_driver: MakeDriver) -> Iterator[Hooked]:
    """A driver hooked to an owner that hands the gateway a placeholder identity; its client
    is closed after the test."""
    owner = RecordingOwner(environment=PLACEHOLDER)
    driver = make_driver()
    driver.hooks = hooks.HookDispatcher([owner])
    yield Hooked(driver, owner)


def _container_environment(kube_api: FakeKubeAPI, namespace: str, name: str) -> dict[str, str]:
    deployment = kube_api.get("deployments", namespace, name)
    assert deployment is not None
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return {entry["name"]: entry.get("value", "") for entry in container.get("env", [])}


def test_hooks_run_at_the_seeds_points_and_placeholders_reach_the_gateway(
    hooked: Hooked, kube_api: FakeKubeAPI, operation: base.Operation, specs: helpers.Specs
) -> None:
    driver, owner = hooked
    namespace, revision = helpers.deployed(driver, kube_api, operation, specs)
    assert owner.stages()[0] == "after_namespace_prepared"
    assert "before_workload_start" in owner.stages()
    environment = _container_environment(kube_api, namespace, helpers.gateway_name(revision))
    assert environment["RUNTIME_IDENTITY"] == "opaque-identity:test-1"

    owner.calls.clear()
    driver.retire_revision(operation, revision)
    assert owner.calls == [("before_workload_stop", revision.revision_id)]
    owner.assert_saw_no_secret()


def test_a_failed_activation_apply_compensates_the_launch_hooks(
    hooked: Hooked, kube_api: FakeKubeAPI, operation: base.Operation, specs: helpers.Specs
) -> None:
    driver, owner = hooked
    helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    owner.calls.clear()
    kube_api.inject("PATCH", r"/deployments/", status=500)
    with pytest.raises(base.TransientDriverError):
        driver.activate_revision(operation, revision)
    assert owner.calls == [
        ("before_workload_start", revision.revision_id),
        ("before_workload_stop", revision.revision_id),
    ]
    owner.assert_saw_no_secret()


def test_a_rollout_past_its_deadline_compensates_the_launch_hooks(
    hooked: Hooked, kube_api: FakeKubeAPI, operation: base.Operation, specs: helpers.Specs
) -> None:
    driver, owner = hooked
    namespace = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert isinstance(driver.activate_revision(operation, revision), base.Pending)
    kube_api.mark_rollout(namespace, helpers.gateway_name(revision), "deadline")
    owner.calls.clear()
    failed = driver.activate_revision(operation, revision)
    assert isinstance(failed, base.Failed)
    assert owner.calls[-1] == ("before_workload_stop", revision.revision_id)


def test_a_failed_revocation_keeps_the_gateway_for_the_retry(
    hooked: Hooked, kube_api: FakeKubeAPI, operation: base.Operation, specs: helpers.Specs
) -> None:
    driver, owner = hooked
    namespace, revision = helpers.deployed(driver, kube_api, operation, specs)
    owner.fail["before_workload_stop"] = base.TransientDriverError("REVOCATION_PENDING")
    with pytest.raises(base.TransientDriverError):
        driver.retire_revision(operation, revision)
    assert kube_api.get("deployments", namespace, helpers.gateway_name(revision)) is not None
    del owner.fail["before_workload_stop"]
    driver.retire_revision(operation, revision)
    assert kube_api.get("deployments", namespace, helpers.gateway_name(revision)) is None
