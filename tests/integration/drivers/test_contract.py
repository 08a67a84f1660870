"""The Compute Driver contract, the same observable behaviour asked of every driver.

One suite, parametrised over the drivers that exist: each ``Harness`` builds its driver on
real infrastructure (local: gateway processes on this machine; docker: a real engine;
kubernetes: the fake API server over HTTP, whose simulated controllers stand in for the
cluster's; ssh: a real OpenSSH server on a loopback port, units under occ's supervisor) and
knows how to let a runtime become ready. Adding a driver means adding one harness and one
fixture param.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, rbac
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.compute.ssh import SshComputeDriver, hosts
from occ.settings.config import Settings
from tests.integration.drivers.docker import objects as docker_objects
from tests.integration.drivers.kubernetes import helpers
from tests.support import ssh_server
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

READY_TIMEOUT = 20.0
TENANT_NAMESPACE = "tenant-contract"


@dataclass
class Harness:
    """A driver under test and what the test needs to drive and observe it."""

    driver: Any
    settle: Callable[[base.RevisionSpec], None]
    """Let the revision's runtime make progress (a cluster's controllers, a process start)."""
    snapshot: Callable[[], object]
    """Everything the driver could have changed, comparable for equality."""
    credential: bool = True
    place: Callable[[base.NamespaceSpec], base.NamespaceSpec] = lambda namespace: namespace
    """The Namespace as the installation places it (a tenant-scoped one: in a provisioned
    Kubernetes namespace)."""


def _local(tmp_path: Path) -> Iterator[Harness]:
    root = tmp_path / "local"
    driver = LocalComputeDriver(root)

    def snapshot() -> object:
        if not root.exists():
            return frozenset()
        return frozenset(
            (str(path.relative_to(root)), path.stat().st_mtime_ns)
            for path in root.rglob("*")
            if path.is_file() and path.name not in ("effects.jsonl", ".lock")
        )

    try:
        yield Harness(driver=driver, settle=lambda _revision: None, snapshot=snapshot)
    finally:
        for pid in driver.gateway_processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _kubernetes(tmp_path: Path, *, tenant_scoped: bool = False) -> Iterator[Harness]:
    with FakeKubeAPI(validate=True) as fake:
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        settings = Settings(
            kubernetes_kubeconfig=str(kubeconfig),
            kubernetes_gateway_image=helpers.GATEWAY_IMAGE,
        )
        placed_in: str | None = None
        if tenant_scoped:  # the administrator's step, and nothing more granted than its Role
            fake.create_foreign("namespaces", None, {"metadata": {"name": TENANT_NAMESPACE}})
            fake.grant_only(rbac.provisioning([TENANT_NAMESPACE]))
            settings = settings.replace(
                kubernetes_installation="tenant-scoped",
                kubernetes_managed_namespaces=TENANT_NAMESPACE,
            )
            placed_in = TENANT_NAMESPACE

        def place(namespace: base.NamespaceSpec) -> base.NamespaceSpec:
            if placed_in is None:
                return namespace
            return dataclasses.replace(namespace, existing_namespace=placed_in)

        driver = KubernetesComputeDriver.from_settings(settings)

        def settle(revision: base.RevisionSpec) -> None:
            namespace = driver.kubernetes_namespace(revision.namespace_id)
            if namespace and fake.get("deployments", namespace, helpers.gateway_name(revision)):
                fake.mark_rollout(namespace, helpers.gateway_name(revision))
            if namespace:
                terminating = fake.get("namespaces", None, namespace)
                if terminating is not None and terminating["metadata"].get("deletionTimestamp"):
                    fake.finish_namespace_deletion(namespace)

        def snapshot() -> object:
            return frozenset(
                (plural, obj["metadata"].get("namespace"), obj["metadata"]["name"], rv)
                for plural in ("namespaces", *helpers.AGENT_PLURALS, "networkpolicies")
                for obj in fake.objects(plural)
                for rv in [obj["metadata"]["resourceVersion"]]
            )

        yield Harness(driver=driver, settle=settle, snapshot=snapshot, place=place)
        driver.close()
        assert fake.validation_errors == []
        assert not [r.path for r in fake.journal if r.status == 403]


def _docker(tmp_path: Path) -> Iterator[Harness]:
    host = docker_objects.engine_host()
    client = docker_objects.engine_client(host)
    driver = docker_objects.make_driver(host)
    before = docker_objects.managed_ids(client)

    def snapshot() -> object:
        return docker_objects.managed_state(client)

    try:
        yield Harness(driver=driver, settle=lambda _revision: None, snapshot=snapshot)
    finally:
        driver.engine.close()
        docker_objects.remove_managed(client, keep=before)
        client.close()


def _ssh(server: ssh_server.Server) -> Iterator[Harness]:
    root = ssh_server.new_root()
    driver = SshComputeDriver(
        hosts.parse_pool([server.pool_entry()]), root=str(root), readiness_wait_s=5
    )

    def snapshot() -> object:
        return frozenset(
            (str(path.relative_to(root)), path.stat().st_mtime_ns)
            for path in root.rglob("*")
            if path.is_file() and path.relative_to(root).parts[0] != "run"
        )

    try:
        yield Harness(driver=driver, settle=lambda _revision: None, snapshot=snapshot)
    finally:
        driver.close()
        ssh_server.cleanup(root)


HARNESSES: dict[str, Callable[[Path], Iterator[Harness]]] = {
    "local": _local,
    "kubernetes": _kubernetes,
    "kubernetes-tenant-scoped": lambda tmp_path: _kubernetes(tmp_path, tenant_scoped=True),
    "docker": _docker,
}


@pytest.fixture(params=sorted([*HARNESSES, "ssh"]))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "ssh":
        yield from _ssh(request.getfixturevalue("ssh_host"))
    else:
        yield from HARNESSES[request.param](tmp_path)


def _operation(*, aborted: bool = False) -> base.Operation:
    abort = threading.Event()
    if aborted:
        abort.set()
    return base.Operation(work_id="contract", claim_token=str(uuid.uuid4()), abort=abort)


def _specs() -> tuple[base.NamespaceSpec, base.RevisionSpec]:
    namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="contract")
    revision = base.RevisionSpec(
        namespace_id=namespace.id,
        agent_id=f"agt_{uuid.uuid4()}",
        revision_id=f"rev_{uuid.uuid4()}",
        revision_number=1,
        configuration_generation=1,
        configuration_document={"model": "stand-in"},
        harness_id="openclaw",
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id=f"prn_{uuid.uuid4()}",
        credential=base.Credential(helpers.CREDENTIAL, "test-fingerprint-key"),
    )
    return namespace, revision


def _until_ready(harness: Harness, call: Callable[[], object], revision: base.RevisionSpec) -> Any:
    def attempt() -> object:
        result = call()
        if isinstance(result, base.Pending):
            harness.settle(revision)
            return None
        return result

    return wait_for(attempt, timeout=READY_TIMEOUT, message="the driver to converge")


def test_the_whole_lifecycle_is_idempotent_at_every_step(harness: Harness) -> None:
    driver, operation = harness.driver, _operation()
    namespace, revision = _specs()
    namespace = harness.place(namespace)
    for _ in range(2):
        assert isinstance(driver.ensure_namespace(operation, namespace), base.Ready)

    prepared = _until_ready(harness, lambda: driver.prepare_revision(operation, revision), revision)
    assert isinstance(prepared, base.Ready)
    activation = _until_ready(
        harness, lambda: driver.activate_revision(operation, revision), revision
    )
    assert isinstance(activation, base.Activation)
    assert isinstance(activation.endpoint, str) and activation.endpoint.startswith("http")
    before = harness.snapshot()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert driver.activate_revision(operation, revision) == activation
    assert harness.snapshot() == before

    for _ in range(2):
        driver.stop_revision(operation, revision)
    for _ in range(2):
        driver.retire_revision(operation, revision)
    for _ in range(2):
        driver.delete_agent_credentials(operation, namespace.id, revision.agent_id)
    for _ in range(2):
        deleted = _until_ready(
            harness, lambda: driver.delete_namespace(operation, namespace), revision
        )
        assert isinstance(deleted, base.Ready)


def test_an_aborted_operation_raises_aborted_without_any_effect(harness: Harness) -> None:
    driver = harness.driver
    namespace, revision = _specs()
    namespace = harness.place(namespace)
    before = harness.snapshot()
    aborted = _operation(aborted=True)
    calls: tuple[Callable[[], object], ...] = (
        lambda: driver.ensure_namespace(aborted, namespace),
        lambda: driver.prepare_revision(aborted, revision),
    )
    for call in calls:
        with pytest.raises(base.Aborted):
            call()
    assert harness.snapshot() == before

    assert isinstance(driver.ensure_namespace(_operation(), namespace), base.Ready)
    ready = harness.snapshot()
    with pytest.raises(base.Aborted):
        driver.prepare_revision(aborted, revision)
    with pytest.raises(base.Aborted):
        driver.delete_namespace(aborted, namespace)
    assert harness.snapshot() == ready


def test_capabilities_are_well_formed(harness: Harness) -> None:
    driver = harness.driver
    assert isinstance(driver.name, str) and driver.name
    _, revision = _specs()
    for capabilities in (driver.capabilities, driver.revision_capabilities(revision)):
        assert isinstance(capabilities, base.Capabilities)
        assert capabilities.activation_order in tuple(base.ActivationOrder)
        assert isinstance(capabilities.requires_stopped_predecessors, bool)
        interval = capabilities.maintenance_interval_s
        assert interval is None or interval > 0


def test_a_bulk_observation_sees_what_activation_published_and_changes_nothing(
    harness: Harness,
) -> None:
    driver, operation = harness.driver, _operation()
    namespace, revision = _specs()
    namespace = harness.place(namespace)
    never_deployed = dataclasses.replace(_specs()[1], namespace_id=namespace.id)
    driver.ensure_namespace(operation, namespace)
    _until_ready(harness, lambda: driver.prepare_revision(operation, revision), revision)
    activation = _until_ready(
        harness, lambda: driver.activate_revision(operation, revision), revision
    )

    def healthy() -> base.Observed | None:
        observed = driver.observe_revisions([revision, never_deployed])
        harness.settle(revision)
        return observed[revision.revision_id] if observed[revision.revision_id].healthy else None

    seen = wait_for(healthy, timeout=READY_TIMEOUT, message="the revision to be observed healthy")
    assert seen.endpoint == activation.endpoint
    before = harness.snapshot()
    observed = driver.observe_revisions([revision, never_deployed])
    assert harness.snapshot() == before  # read-only
    assert not observed[never_deployed.revision_id].healthy
    assert observed[never_deployed.revision_id].code

    driver.stop_revision(operation, revision)

    def unhealthy() -> bool:
        harness.settle(revision)
        return not driver.observe_revisions([revision])[revision.revision_id].healthy

    wait_for(unhealthy, timeout=READY_TIMEOUT, message="the stopped revision to be observed gone")
    driver.retire_revision(operation, revision)
    driver.delete_agent_credentials(operation, namespace.id, revision.agent_id)
