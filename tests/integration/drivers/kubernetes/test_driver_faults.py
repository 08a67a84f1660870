"""How the ``kubernetes`` driver classifies the API server's failures, and that the retry of a
failed revision preparation converges."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TypeVar

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, failures, naming
from tests.integration.drivers.kubernetes import helpers
from tests.integration.drivers.kubernetes.conftest import MakeDriver
from tests.support.kube_api import FakeKubeAPI

E = TypeVar("E", bound=Exception)


@dataclass(frozen=True)
class Preparation:
    """A revision to prepare in a Namespace ``driver`` has made ready (``namespace``)."""

    driver: KubernetesComputeDriver
    operation: base.Operation
    namespace: str
    revision: base.RevisionSpec

    @classmethod
    def make(
        cls, driver: KubernetesComputeDriver, operation: base.Operation, specs: helpers.Specs
    ) -> Preparation:
        namespace = helpers.ready_namespace(driver, operation, specs)
        return cls(driver, operation, namespace, specs.revision())

    def prepare(self) -> base.Observation:
        return self.driver.prepare_revision(self.operation, self.revision)

    def failure(self, expected: type[E]) -> E:
        """Prepare, which must raise ``expected``; what it raised."""
        with pytest.raises(expected) as raised:
            self.prepare()
        return raised.value


@pytest.fixture
def preparation(
    driver: KubernetesComputeDriver, operation: base.Operation, specs: helpers.Specs
) -> Preparation:
    return Preparation.make(driver, operation, specs)


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_transient_and_the_retry_converges(
    preparation: Preparation, kube_api: FakeKubeAPI, status: int
) -> None:
    kube_api.inject("PATCH", r"/secrets/", status=status)
    failed = preparation.failure(base.TransientDriverError)
    assert failed.code == failures.UNAVAILABLE
    assert str(status) in failed.reason
    assert isinstance(preparation.prepare(), base.Ready)
    secret = naming.credential_secret(preparation.revision.revision_id)
    assert kube_api.get("secrets", preparation.namespace, secret)


def test_throttling_carries_retry_after_and_the_retry_converges(
    preparation: Preparation, kube_api: FakeKubeAPI
) -> None:
    kube_api.inject("POST", r"/configmaps$", status=429, retry_after=3)
    throttled = preparation.failure(failures.Throttled)
    assert isinstance(throttled, base.TransientDriverError)
    assert throttled.retry_after_s == 3.0
    assert isinstance(preparation.prepare(), base.Ready)


@pytest.mark.parametrize("fault", ["timeout", "close"])
def test_timeouts_and_dropped_connections_are_transient(
    make_driver: MakeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
    fault: str,
) -> None:
    driver = make_driver(kubernetes_request_timeout_ms=1_500)  # roomy on a loaded machine
    preparation = Preparation.make(driver, operation, specs)
    if fault == "timeout":
        kube_api.inject("GET", r"/serviceaccounts/", delay_s=4.0)
    else:
        kube_api.inject("GET", r"/serviceaccounts/", close=True)
    assert preparation.failure(base.TransientDriverError).code == failures.UNAVAILABLE
    assert isinstance(preparation.prepare(), base.Ready)


def test_refusals_and_invalid_requests_are_permanent_with_the_kubernetes_reason(
    preparation: Preparation, kube_api: FakeKubeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    kube_api.deny("create", "configmaps")
    with caplog.at_level(logging.WARNING, logger="occ"):
        denied = preparation.failure(base.PermanentDriverError)
    assert denied.code == "KUBERNETES_FORBIDDEN"
    assert "403 Forbidden" in denied.reason
    logged = [json.loads(r.getMessage()) for r in caplog.records if "kubernetes" in r.getMessage()]
    assert any(line.get("reason") == "Forbidden" and line.get("status") == 403 for line in logged)
    assert all(helpers.CREDENTIAL not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("status", [400, 422])
def test_an_invalid_request_is_permanent_and_changes_nothing(
    preparation: Preparation, kube_api: FakeKubeAPI, status: int
) -> None:
    kube_api.inject("POST", r"/configmaps$", status=status)
    invalid = preparation.failure(base.PermanentDriverError)
    assert invalid.code == "KUBERNETES_REQUEST_INVALID"
    assert f"HTTP {status}" in invalid.reason
    assert kube_api.objects("configmaps", preparation.namespace) == []
