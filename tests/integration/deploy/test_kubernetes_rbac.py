"""The RBAC of ``deploy/kubernetes/`` against what occ actually asks of the fake API server.

The workers' ClusterRole is compared with the ``kubernetes`` driver's whole lifecycle, the
API's with a gateway log read (``occ agents logs``): every request needs a rule and every rule
a request. Each identity is bound to its own role only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.kubernetes import KubernetesComputeDriver
from occ.drivers.compute.kubernetes import logs as kubernetes_logs
from tests.integration.deploy import driver_lifecycle, kubernetes_access, kubernetes_files
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI
from tests.support.specs import log_target

WORKERS = "occ-worker"
API = "occ-api"


@pytest.fixture
def kube_api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(validate=True) as fake:
        yield fake
        assert fake.validation_errors == [], "occ sent an object a real API server refuses"


def _exactly(used: kubernetes_access.Used, service_account: str) -> None:
    """``service_account``'s rules grant what ``used`` needed, no more and no less."""
    granted = kubernetes_access.granted(kubernetes_files.bound_rules(service_account))
    missing = sorted(str(access) for access in used.access - granted)
    unused = sorted(str(access) for access in granted - used.access)
    assert (missing, unused) == ([], []), f"missing: {missing}; granted but unused: {unused}"


def test_the_cluster_role_grants_exactly_what_the_driver_uses(
    kube_api: FakeKubeAPI, tmp_path: Path
) -> None:
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    settings = kubernetes_files.settings_of("occ-drivers", tmp_path, kubeconfig)
    driver_lifecycle.run(kube_api, settings)
    assert all(request.status is not None for request in kube_api.journal)
    assert not [r for r in kube_api.journal if r.status in (401, 403)]
    used = kubernetes_access.used(kube_api.journal)
    # the one non-resource path; every cluster lets every user read it (public-info-viewer)
    assert used.non_resource_paths == {"/version"}
    _exactly(used, WORKERS)


def test_preflight_passes_with_only_the_granted_rules(
    kube_api: FakeKubeAPI, tmp_path: Path
) -> None:
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    settings = kubernetes_files.settings_of("occ-drivers", tmp_path, kubeconfig)
    driver = KubernetesComputeDriver.from_settings(settings)
    driver.preflight()
    asked = {
        review
        for review in map(kubernetes_access.access_review, kube_api.journal)
        if review is not None
    }
    granted = kubernetes_access.granted(kubernetes_files.bound_rules(WORKERS))
    for access in asked - granted:
        kube_api.deny(access.verb, access.resource)
    try:
        driver.preflight()
    finally:
        driver.api.close()


@pytest.fixture
def deployed(kube_api: FakeKubeAPI, tmp_path: Path) -> base.RevisionSpec:
    """A revision the workers deployed, its gateway Pod with a line of log."""
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    settings = kubernetes_files.settings_of("occ-drivers", tmp_path, kubeconfig)
    namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="team")
    return helpers.deployed_with_log(settings, kube_api, namespace, "hello")


def _read_as_the_api(kube_api: FakeKubeAPI, tmp_path: Path, revision: base.RevisionSpec) -> None:
    """What ``occ agents logs`` makes the API do: a tail read, then a short follow."""
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "api-kubeconfig")
    reader = kubernetes_logs.KubernetesLogs.from_settings(
        kubernetes_files.settings_of(API, tmp_path, kubeconfig)
    )
    target = log_target(revision)
    assert list(reader.read_logs(target, runtime_logs.LogQuery(tail=1))) == ["hello"]
    follow = runtime_logs.LogQuery(tail=1, follow=True, follow_s=0.5)
    assert list(reader.read_logs(target, follow)) == ["hello"]


def test_the_apis_role_grants_exactly_what_a_log_read_uses(
    kube_api: FakeKubeAPI, tmp_path: Path, deployed: base.RevisionSpec
) -> None:
    before = len(kube_api.journal)
    _read_as_the_api(kube_api, tmp_path, deployed)
    read = kube_api.journal[before:]
    assert read and not [request for request in read if request.method != "GET"]
    _exactly(kubernetes_access.used(read), API)


def test_the_api_reads_logs_with_its_role_alone(
    kube_api: FakeKubeAPI, tmp_path: Path, deployed: base.RevisionSpec
) -> None:
    kube_api.grant_only(
        manifest.document
        for manifest in kubernetes_files.manifests()
        if manifest.kind in ("ClusterRole", "ClusterRoleBinding")
        and manifest.name == "occ-log-reader"
    )
    before = len(kube_api.journal)
    _read_as_the_api(kube_api, tmp_path, deployed)
    assert not [request for request in kube_api.journal[before:] if request.status == 403]
