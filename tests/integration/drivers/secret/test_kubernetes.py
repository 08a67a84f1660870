"""The Kubernetes Secret Driver against the fake API server, over real HTTP: values in
tenant-local Kubernetes Secrets, a reference in the row, ownership checked on every read."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from occ.drivers.compute import base
from occ.drivers.secret import kubernetes
from occ.foundation import errors
from occ.settings.config import Settings
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI

VALUE = "sk-tenant-local-\u00e9"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    with helpers.validating_cluster(tmp_path, secret_driver="kubernetes") as cluster:
        yield cluster


class Tenant(NamedTuple):
    """A Namespace made ready by the kubernetes Compute Driver in the fake cluster, and the
    Secret Driver on that cluster."""

    fake: FakeKubeAPI
    driver: kubernetes.KubernetesSecrets
    namespace_id: str
    kubernetes_namespace: str


@pytest.fixture
def driver(cluster: tuple[FakeKubeAPI, Settings]) -> Iterator[kubernetes.KubernetesSecrets]:
    """The Secret Driver on the fake cluster; its client is closed after the test."""
    driver = kubernetes.KubernetesSecrets.from_settings(cluster[1])
    yield driver
    driver.api.close()


@pytest.fixture
def tenant(cluster: tuple[FakeKubeAPI, Settings], driver: kubernetes.KubernetesSecrets) -> Tenant:
    fake, settings = cluster
    namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="team")
    return Tenant(fake, driver, namespace.id, helpers.tenant(settings, namespace))


def test_a_value_lives_in_a_tenant_local_secret_and_the_row_keeps_a_reference(
    tenant: Tenant,
) -> None:
    fake, driver, namespace_id, kubernetes_namespace = tenant
    secret_id = f"sec_{uuid.uuid4()}"
    stored = driver.seal(namespace_id, secret_id, VALUE)
    assert VALUE.encode() not in stored and stored.startswith(b"kubernetes-secret:v1:")
    found = fake.get("secrets", kubernetes_namespace, kubernetes.object_name(secret_id))
    assert found is not None
    assert base64.b64decode(found["data"]["value"]).decode() == VALUE
    assert found["metadata"]["annotations"][kubernetes.SECRET_ID_ANNOTATION] == secret_id
    assert driver.unseal(namespace_id, secret_id, stored) == VALUE

    driver.remove(namespace_id, secret_id)
    driver.remove(namespace_id, secret_id)  # idempotent
    assert fake.get("secrets", kubernetes_namespace, kubernetes.object_name(secret_id)) is None
    with pytest.raises(errors.SecretUnreadable):
        driver.unseal(namespace_id, secret_id, stored)


def test_a_reference_to_another_secret_and_a_foreign_object_are_refused(
    tenant: Tenant,
) -> None:
    fake, driver, namespace_id, kubernetes_namespace = tenant
    first, second = f"sec_{uuid.uuid4()}", f"sec_{uuid.uuid4()}"
    stored = driver.seal(namespace_id, first, VALUE)
    with pytest.raises(errors.SecretUnreadable):
        driver.unseal(namespace_id, second, stored)  # a reference copied onto another row

    fake.create_foreign(
        "secrets",
        kubernetes_namespace,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": kubernetes.object_name(second), "namespace": kubernetes_namespace},
            "data": {"value": base64.b64encode(b"planted").decode()},
        },
    )
    with pytest.raises(errors.SecretUnreadable):
        driver.unseal(namespace_id, second, b"kubernetes-secret:v1:" + b"x")
    with pytest.raises(errors.SecretUnreadable) as raised:
        driver.unseal(
            namespace_id, second, b"kubernetes-secret:v1:" + kubernetes.object_name(second).encode()
        )
    assert "not occ's" in raised.value.detail


def test_a_namespace_without_its_kubernetes_namespace_is_unavailable_for_now(
    driver: kubernetes.KubernetesSecrets,
) -> None:
    with pytest.raises(errors.DependencyUnavailable) as raised:
        driver.seal(f"ns_{uuid.uuid4()}", f"sec_{uuid.uuid4()}", VALUE)
    assert VALUE not in str(raised.value)


def test_an_api_failure_is_a_dependency_failure_without_the_value(
    tenant: Tenant,
) -> None:
    fake, driver, namespace_id, _ = tenant
    fake.inject("PATCH", r"/secrets/", status=500)
    with pytest.raises(errors.DependencyUnavailable) as raised:
        driver.seal(namespace_id, f"sec_{uuid.uuid4()}", VALUE)
    assert VALUE not in str(raised.value)
