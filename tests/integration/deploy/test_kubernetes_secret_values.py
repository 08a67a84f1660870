"""The opt-in component ``deploy/kubernetes/components/secret-values`` against what the API asks
of the fake API server with the kubernetes Secret Driver.

An overlay with the component builds, selects the driver and binds ``occ-secret-values`` to
the API; the API's settings then seal, unseal and remove a value, and every request of those
needs a rule of ``occ-log-reader`` or ``occ-secret-values``, every rule of the latter a
request. With RBAC enforced, the two roles are enough and ``occ-log-reader`` alone is not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, NamedTuple

import kubernetes_validate
import pytest
import yaml

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import access, kinds, rbac
from occ.drivers.secret import kubernetes
from occ.foundation import errors
from occ.runtime import composition
from tests.integration.deploy import kubernetes_access, kubernetes_files
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI

NAME: Final = "secret-values"
COMPONENT: Final = kubernetes_files.COMPONENTS / NAME
ROLE: Final = "occ-secret-values"
LOG_READER: Final = "occ-log-reader"
API: Final = "occ-api"
VALUE: Final = "sk-kept-by-the-api"

Document = dict[str, Any]


def _patched_settings() -> dict[str, str]:
    """What the component's patch adds to occ-settings."""
    (patch,) = [m.document for m in kubernetes_files.component(NAME) if m.kind == "ConfigMap"]
    data: dict[str, str] = patch["data"]
    return data


def _rbac(*names: str) -> list[Document]:
    """The ClusterRoles and ClusterRoleBindings ``names``, of the directory or the component."""
    return [
        manifest.document
        for manifest in (*kubernetes_files.manifests(), *kubernetes_files.component(NAME))
        if manifest.kind in ("ClusterRole", "ClusterRoleBinding") and manifest.name in names
    ]


# -- the files and the overlay ---------------------------------------------------------------


def test_the_component_applies_its_files_and_its_role_is_the_secret_value_access() -> None:
    (kustomization,) = kubernetes_files.load(COMPONENT / kubernetes_files.KUSTOMIZATION)
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
    assert kustomization["kind"] == "Component"
    listed = [*kustomization["resources"], *(p["path"] for p in kustomization["patches"])]
    on_disk = [p.name for p in kubernetes_files.files(COMPONENT)]
    assert sorted(listed) == sorted(set(on_disk) - {kubernetes_files.KUSTOMIZATION})
    (role,) = [d for d in _rbac(ROLE) if d["kind"] == "ClusterRole"]
    assert role["rules"] == rbac.rules(access.SECRET_VALUE_ACCESS)
    assert _patched_settings() == {"OCC_SECRET_DRIVER": composition.KUBERNETES_SECRETS}


def test_an_overlay_with_the_component_selects_the_driver_and_binds_the_api(
    tmp_path: Path,
) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (its kustomize builds the overlay)")
    base_directory = os.path.relpath(kubernetes_files.DIRECTORY, tmp_path)
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base_directory],
        "components": [os.path.relpath(COMPONENT, tmp_path)],
    }
    (tmp_path / kubernetes_files.KUSTOMIZATION).write_text(yaml.safe_dump(overlay))
    built = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(built) if o}
    directory = {(m.kind, m.name) for m in kubernetes_files.manifests()}
    assert set(objects) == directory | {("ClusterRole", ROLE), ("ClusterRoleBinding", ROLE)}

    settings = objects[("ConfigMap", "occ-settings")]
    assert settings["data"] == kubernetes_files.config_map_data("occ-settings") | {
        "OCC_SECRET_DRIVER": "kubernetes"
    }
    assert objects[("ClusterRole", ROLE)]["rules"] == rbac.rules(access.SECRET_VALUE_ACCESS)
    binding = objects[("ClusterRoleBinding", ROLE)]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": ROLE,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": API, "namespace": "occ-system"}
    ]
    for document in (
        *(m.document for m in kubernetes_files.component(NAME)),
        settings,
        objects[("ClusterRole", ROLE)],
        binding,
    ):
        for version in kubernetes_files.SUPPORTED_VERSIONS:
            kubernetes_validate.validate(document, version, strict=True)


# -- what the API asks of the API server -----------------------------------------------------


class Tenant(NamedTuple):
    """The fake cluster with a ready Namespace, and the Secret Driver the API's settings
    build."""

    fake: FakeKubeAPI
    driver: kubernetes.KubernetesSecrets
    namespace_id: str
    kubernetes_namespace: str


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[Tenant]:
    with FakeKubeAPI(validate=True) as fake:
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        workers = kubernetes_files.settings_of("occ-drivers", tmp_path, kubeconfig)
        namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="team")
        kubernetes_namespace = helpers.tenant(workers, namespace)
        settings = kubernetes_files.settings_of(API, tmp_path, kubeconfig, _patched_settings())
        driver = composition.secret_driver(settings)  # as the API builds it
        assert isinstance(driver, kubernetes.KubernetesSecrets)
        try:
            yield Tenant(fake, driver, namespace.id, kubernetes_namespace)
        finally:
            driver.api.close()
        assert fake.validation_errors == [], "occ sent an object a real API server refuses"


def _keep_and_drop(tenant: Tenant) -> None:
    """What a Secret's creation, a deploy's read and the Secret's deletion make the driver do."""
    fake, driver, namespace_id, kubernetes_namespace = tenant
    secret_id = f"sec_{uuid.uuid4()}"
    stored = driver.seal(namespace_id, secret_id, VALUE)
    assert driver.unseal(namespace_id, secret_id, stored) == VALUE
    driver.remove(namespace_id, secret_id)
    assert fake.get("secrets", kubernetes_namespace, kubernetes.object_name(secret_id)) is None


def test_the_apis_roles_grant_what_its_secret_values_use_and_the_component_no_more(
    tenant: Tenant,
) -> None:
    before = len(tenant.fake.journal)
    _keep_and_drop(tenant)
    requests = tenant.fake.journal[before:]
    assert {request.method for request in requests} == {"GET", "PATCH", "DELETE"}
    assert not [request for request in requests if request.status in (401, 403)]
    used = kubernetes_access.used(requests)
    assert used.non_resource_paths == frozenset()

    with_component = kubernetes_access.granted(
        kubernetes_files.bound_rules(API, kubernetes_files.component(NAME))
    )
    role = kubernetes_access.granted(
        rule
        for document in _rbac(ROLE)
        if document["kind"] == "ClusterRole"
        for rule in document["rules"]
    )
    missing = sorted(str(item) for item in used.access - with_component)
    unused = sorted(str(item) for item in role - used.access)
    assert (missing, unused) == ([], []), f"missing: {missing}; granted but unused: {unused}"
    # the component adds only what the log reader lacks: the namespaces' list is the latter's
    without = kubernetes_access.granted(kubernetes_files.bound_rules(API))
    assert used.access - without == role
    assert role == {
        kubernetes_access.Access(kind.group, kind.resource, verb)
        for verb, kind in access.SECRET_VALUE_ACCESS
    }
    assert kubernetes_access.Access("", kinds.NAMESPACE.resource, "list") in used.access & without


def test_the_api_keeps_values_with_the_log_reader_and_the_component_alone(
    tenant: Tenant,
) -> None:
    tenant.fake.grant_only(_rbac(LOG_READER, ROLE))
    before = len(tenant.fake.journal)
    _keep_and_drop(tenant)
    assert not [request for request in tenant.fake.journal[before:] if request.status == 403]


def test_without_the_component_the_api_may_not_keep_a_value(tenant: Tenant) -> None:
    tenant.fake.grant_only(_rbac(LOG_READER))
    before = len(tenant.fake.journal)
    with pytest.raises(errors.DependencyUnavailable) as raised:
        tenant.driver.seal(tenant.namespace_id, f"sec_{uuid.uuid4()}", VALUE)
    assert raised.value.code == "DEPENDENCY_UNAVAILABLE"
    assert "KUBERNETES_FORBIDDEN" in raised.value.detail
    assert VALUE not in str(raised.value)
    refused = [
        (request.method, request.status)
        for request in tenant.fake.journal[before:]
        if "/secrets/" in request.path
    ]
    assert refused == [("PATCH", 403)]
