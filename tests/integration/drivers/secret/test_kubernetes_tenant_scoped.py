"""The kubernetes Secret Driver in a tenant-scoped installation: the API keeps a value in a
managed namespace with only the Roles ``occ kubernetes rbac --secret-values`` prints for it (a
fake API server enforcing RBAC), finding the namespace by name as it may not list namespaces."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import access, rbac
from occ.drivers.secret import kubernetes
from occ.foundation import errors
from occ.settings.config import Settings
from tests.integration.deploy import kubernetes_access
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI

MANAGED = "tenant-a"
VALUE = "sk-tenant-scoped-FAKE"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    with helpers.validating_cluster(
        tmp_path,
        secret_driver="kubernetes",
        kubernetes_installation="tenant-scoped",
        kubernetes_managed_namespaces=MANAGED,
    ) as cluster:
        yield cluster


def _ready(fake: FakeKubeAPI, settings: Settings) -> str:
    """A Namespace the workers made ready in the managed namespace, with the workers' Role."""
    fake.create_foreign("namespaces", None, rbac.namespace(MANAGED))
    workers_role, workers_binding, *_ = rbac.provisioning([MANAGED])
    fake.grant_only([workers_role, workers_binding])
    namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="a", existing_namespace=MANAGED)
    assert helpers.tenant(settings, namespace) == MANAGED
    return namespace.id


def test_the_api_keeps_a_value_with_the_printed_roles_alone(
    cluster: tuple[FakeKubeAPI, Settings],
) -> None:
    fake, settings = cluster
    namespace_id = _ready(fake, settings)
    _, _, *api_roles = rbac.provisioning([MANAGED], secret_values=True)
    fake.grant_only(api_roles)
    before = len(fake.journal)
    driver = kubernetes.KubernetesSecrets.from_settings(settings)
    try:
        secret_id = f"sec_{uuid.uuid4()}"
        stored = driver.seal(namespace_id, secret_id, VALUE)
        assert driver.unseal(namespace_id, secret_id, stored) == VALUE
        driver.remove(namespace_id, secret_id)
    finally:
        driver.api.close()
    kept = fake.journal[before:]
    assert not [request for request in kept if request.status in (401, 403)]
    printed = {*access.NAMESPACED_LOG_READER_ACCESS, *access.SECRET_VALUE_ACCESS}
    assert kubernetes_access.used(kept).access <= {
        kubernetes_access.Access(kind.group, kind.resource, verb) for verb, kind in printed
    }


def test_without_the_secret_values_role_a_value_is_refused(
    cluster: tuple[FakeKubeAPI, Settings],
) -> None:
    fake, settings = cluster
    namespace_id = _ready(fake, settings)
    _, _, *log_reader = rbac.provisioning([MANAGED])
    fake.grant_only(log_reader)
    driver = kubernetes.KubernetesSecrets.from_settings(settings)
    try:
        with pytest.raises(errors.DependencyUnavailable):
            driver.seal(namespace_id, f"sec_{uuid.uuid4()}", VALUE)
    finally:
        driver.api.close()
