"""A tenant-scoped installation: the driver with exactly the Role ``occ kubernetes rbac``
prints in each managed namespace, and nothing cluster-wide, against a fake API server that
enforces RBAC as the API server does."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from occ.cli import cli
from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, access, naming, rbac, watched
from occ.drivers.compute.kubernetes import namespaces as kube_namespaces
from occ.settings.config import Settings
from tests.integration.deploy import kubernetes_access
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

MANAGED = ("tenant-a", "tenant-b")


def _settings(kubeconfig: Path, managed: tuple[str, ...] = MANAGED) -> Settings:
    return Settings(
        kubernetes_kubeconfig=str(kubeconfig),
        kubernetes_gateway_image=helpers.GATEWAY_IMAGE,
        kubernetes_request_timeout_ms=2_000,
        kubernetes_installation="tenant-scoped",
        kubernetes_managed_namespaces=",".join(managed),
    )


def _provisioned(kube_api: FakeKubeAPI, *names: str, granted: tuple[str, ...] = MANAGED) -> None:
    """The administrator's step: the namespaces, and occ's Role in those of ``granted``."""
    for name in names:
        kube_api.create_foreign("namespaces", None, rbac.namespace(name))
    kube_api.grant_only(rbac.provisioning(granted))


def _forbidden(kube_api: FakeKubeAPI) -> list[str]:
    return [f"{r.method} {r.path}" for r in kube_api.journal if r.status in (401, 403)]


def _namespaced_access(kube_api: FakeKubeAPI) -> set[kubernetes_access.Access]:
    """What the journal asked for, apart from the review every user may create."""
    used = kubernetes_access.used(kube_api.journal)
    assert used.non_resource_paths == {"/version"}
    return {found for found in used.access if found.resource != "selfsubjectaccessreviews"}


def _watching_every_namespaced_kind(kube_api: FakeKubeAPI) -> None:
    expected = {kind.kind.plural for kind in watched.KINDS if kind.kind.namespaced}
    wait_for(
        lambda: set(helpers.watch_requests(kube_api)) >= expected,
        timeout=helpers.OBSERVED_TIMEOUT,
        message="a watch of every namespaced kind",
    )


def test_occ_works_with_exactly_the_printed_role_and_nothing_more(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    operation = base.Operation(work_id="w", claim_token="t", abort=threading.Event())
    adopted = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="a", existing_namespace="tenant-a")
    derived_id = f"ns_{uuid.uuid4()}"
    derived_name = naming.kubernetes_namespace("occ-", derived_id)
    managed = (*MANAGED, derived_name)
    _provisioned(kube_api, *managed, granted=managed)
    settings = _settings(kubeconfig, managed)

    driver = KubernetesComputeDriver.from_settings(settings)
    driver.preflight()
    specs = helpers.Specs(namespace=adopted, agent_id=f"agt_{uuid.uuid4()}")
    assert isinstance(driver.ensure_namespace(operation, adopted), base.Ready)
    first = specs.revision()
    helpers.deploy(driver, kube_api, operation, first)
    assert helpers.observed_healthy(driver, first).endpoint == (
        f"http://{naming.agent_object(specs.agent_id)}.tenant-a.svc.cluster.local:8080"
    )
    _watching_every_namespaced_kind(kube_api)
    driver.close()

    driver = KubernetesComputeDriver.from_settings(settings)  # finds tenant-a by name again
    second = specs.revision()
    helpers.deploy(driver, kube_api, operation, second)
    driver.retire_revision(operation, first)
    driver.stop_revision(operation, second)
    dedicated_agent = helpers.dedicated_handover(driver, kube_api, operation, specs, "tenant-a")
    driver.delete_agent_credentials(operation, adopted.id, specs.agent_id)
    driver.delete_agent_credentials(operation, adopted.id, dedicated_agent)
    observation = driver.delete_namespace(operation, adopted)
    while isinstance(observation, base.Pending):
        observation = driver.delete_namespace(operation, adopted)
    assert kube_api.objects("deployments", "tenant-a") == []
    assert kube_api.get("namespaces", None, "tenant-a") is not None  # never deleted

    # a Namespace without an existing namespace: its derived name, provisioned beforehand
    derived = base.NamespaceSpec(id=derived_id, name="d")
    assert isinstance(driver.ensure_namespace(operation, derived), base.Ready)
    assert driver.kubernetes_namespace(derived_id) == derived_name
    helpers.deploy(
        driver, kube_api, operation, helpers.Specs(derived, f"agt_{uuid.uuid4()}").revision()
    )
    assert not kube_api.objects("resourcequotas", derived_name)  # the tenant's own business
    observation = driver.delete_namespace(operation, derived)
    while isinstance(observation, base.Pending):
        observation = driver.delete_namespace(operation, derived)
    assert kube_api.get("namespaces", None, derived_name) is not None
    driver.close()

    assert _forbidden(kube_api) == []
    used = _namespaced_access(kube_api)
    granted = kubernetes_access.granted(rbac.rules())
    missing = sorted(map(str, used - granted))
    unused = sorted(map(str, granted - used))
    assert (missing, unused) == ([], []), f"missing: {missing}; granted but unused: {unused}"
    assert not [r for r in kube_api.journal if r.path == "/api/v1/namespaces"]  # no list, no create


def test_preflight_lists_what_each_namespace_misses(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    _provisioned(kube_api, *MANAGED, granted=("tenant-a",))
    driver = KubernetesComputeDriver.from_settings(_settings(kubeconfig))
    try:
        with pytest.raises(base.PermanentDriverError) as refused:
            driver.preflight()
        assert refused.value.code == access.PERMISSION_MISSING
        assert refused.value.reason.startswith("namespace tenant-b: occ may not get namespaces")
        assert "tenant-a" not in refused.value.reason
        for verb, kind in access.NAMESPACED_ACCESS:
            assert f"{verb} {kind.resource}" in refused.value.reason
        kube_api.grant_only(rbac.provisioning(MANAGED))
        verification = access.check(driver.api, access.TENANT_SCOPED, MANAGED)
        assert verification.lines(everything=True) == [
            f"namespace {name}: ok ({len(access.NAMESPACED_ACCESS)} accesses granted)"
            for name in MANAGED
        ]
        # nothing cluster-wide was asked: each review named its namespace
        reviews = [
            r.body["spec"]["resourceAttributes"]
            for r in kube_api.journal
            if r.path.endswith("selfsubjectaccessreviews")
        ]
        assert reviews and all(a.get("namespace") in MANAGED for a in reviews)
    finally:
        driver.close()


def test_a_namespace_without_its_role_stays_pending_with_a_code_and_is_untouched(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    _provisioned(kube_api, *MANAGED, "elsewhere", granted=("tenant-a",))
    driver = KubernetesComputeDriver.from_settings(_settings(kubeconfig))
    operation = base.Operation(work_id="w", claim_token="t", abort=threading.Event())
    try:
        before = kube_api.resource_version
        waiting = base.NamespaceSpec(
            id=f"ns_{uuid.uuid4()}", name="b", existing_namespace="tenant-b"
        )
        pending = driver.ensure_namespace(operation, waiting)
        assert isinstance(pending, base.Pending)
        assert pending.code == access.PERMISSION_MISSING
        assert "occ kubernetes rbac --namespace tenant-b" in pending.reason
        outside = base.NamespaceSpec(
            id=f"ns_{uuid.uuid4()}", name="e", existing_namespace="elsewhere"
        )
        pending = driver.ensure_namespace(operation, outside)
        assert isinstance(pending, base.Pending)
        assert pending.code == kube_namespaces.NOT_MANAGED
        assert kube_api.resource_version == before  # nothing written anywhere
        assert _forbidden(kube_api) == []

        kube_api.grant_only(rbac.provisioning(MANAGED))  # the administrator applies the Role
        assert isinstance(driver.ensure_namespace(operation, waiting), base.Ready)
        assert driver.kubernetes_namespace(waiting.id) == "tenant-b"
    finally:
        driver.close()


def test_a_cluster_installation_refuses_to_start_with_only_the_roles(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    _provisioned(kube_api, *MANAGED)
    driver = KubernetesComputeDriver.from_settings(
        Settings(
            kubernetes_kubeconfig=str(kubeconfig),
            kubernetes_gateway_image=helpers.GATEWAY_IMAGE,
        )
    )
    try:
        with pytest.raises(base.PermanentDriverError) as refused:
            driver.preflight()
        assert refused.value.reason.startswith("cluster: occ may not get namespaces")
    finally:
        driver.close()


def test_occ_kubernetes_verify_prints_each_namespace_and_fails_on_a_missing_role(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    _provisioned(kube_api, *MANAGED, granted=("tenant-a",))
    env = {
        "OCC_ENV": "development",
        "OCC_KUBERNETES_KUBECONFIG": str(kubeconfig),
        "OCC_KUBERNETES_GATEWAY_IMAGE": helpers.GATEWAY_IMAGE,
        "OCC_KUBERNETES_INSTALLATION": "tenant-scoped",
        "OCC_KUBERNETES_MANAGED_NAMESPACES": ",".join(MANAGED),
    }
    result = CliRunner().invoke(cli, ["kubernetes", "verify"], env=env)
    assert result.exit_code == 1
    count = len(access.NAMESPACED_ACCESS)
    lines = result.output.splitlines()
    assert lines[:3] == [
        f"occ kubernetes verify: tenant-scoped installation, API server 1.34, "
        f"{2 * count} accesses checked",
        f"namespace tenant-a: ok ({count} accesses granted)",
        "namespace tenant-b: occ may not "
        + ", ".join(f"{verb} {kind.resource}" for verb, kind in access.NAMESPACED_ACCESS),
    ]
    assert "occ lacks access it needs" in result.output

    kube_api.grant_only(rbac.provisioning(MANAGED))
    result = CliRunner().invoke(cli, ["kubernetes", "verify"], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1:] == [
        f"namespace {name}: ok ({count} accesses granted)" for name in MANAGED
    ]


def test_the_cache_watches_each_managed_namespace_and_refuses_one_it_cannot_list(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    """Each managed namespace has streams of its own: one that cannot be listed keeps the
    cache from answering, naming that namespace's stream, while nothing cluster-wide is asked."""
    operation = base.Operation(work_id="w", claim_token="t", abort=threading.Event())
    _provisioned(kube_api, *MANAGED)
    driver = KubernetesComputeDriver.from_settings(_settings(kubeconfig))
    try:
        spec = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="a", existing_namespace="tenant-a")
        specs = helpers.Specs(namespace=spec, agent_id=f"agt_{uuid.uuid4()}")
        assert isinstance(driver.ensure_namespace(operation, spec), base.Ready)
        revision = specs.revision()
        helpers.deploy(driver, kube_api, operation, revision)
        helpers.observed_healthy(driver, revision)
        watched_in = {
            request.path.split("/namespaces/", 1)[1].split("/", 1)[0]
            for request in kube_api.journal
            if request.query.get("watch", [""])[-1] == "true"
        }
        assert watched_in == set(MANAGED)
        driver.close()

        kube_api.deny("list", "deployments", "tenant-b")
        driver = KubernetesComputeDriver.from_settings(_settings(kubeconfig))
        driver.informer.sync_wait_s = 1.0
        with pytest.raises(base.TransientDriverError) as refused:
            helpers.observed(driver, revision)
        assert refused.value.code == "KUBERNETES_NOT_OBSERVED"
        assert "deployments in tenant-b" in refused.value.reason
        assert "deployments in tenant-a" not in refused.value.reason
    finally:
        driver.close()
