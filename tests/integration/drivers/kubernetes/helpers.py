"""Helpers of the ``kubernetes`` driver tests: a validating fake cluster, specs, a tenant or a
full deploy, observations, object versions, the watches of the observation cache."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, informer, naming, watched
from occ.settings.config import Settings
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

GATEWAY_IMAGE = "registry.example/occ-gateway:test"
CREDENTIAL = "sk-kubernetes-never-shown-4711"
AGENT_PLURALS = (
    "configmaps",
    "secrets",
    "serviceaccounts",
    "services",
    "persistentvolumeclaims",
    "deployments",
)
"""The kinds of object the driver writes for an Agent and its revisions."""
WATCHED_PLURALS = frozenset(kind.kind.plural for kind in watched.KINDS)
"""The kinds the observation cache lists and watches."""
OBSERVED_TIMEOUT = 10.0


@contextlib.contextmanager
def validating_cluster(tmp_path: Path, **settings: Any) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    """A fake API server that validates what it is sent, and the Settings of drivers that talk
    to it (``settings`` add to them); on the way out, asserts nothing sent was invalid."""
    with FakeKubeAPI(validate=True) as fake:
        yield (
            fake,
            Settings(
                kubernetes_kubeconfig=str(fake.write_kubeconfig(tmp_path / "kubeconfig")),
                kubernetes_gateway_image=GATEWAY_IMAGE,
                **settings,
            ),
        )
        assert fake.validation_errors == []


def tenant(settings: Settings, namespace: base.NamespaceSpec) -> str:
    """Ensure ``namespace`` with the Compute Driver of ``settings`` (asserting it is ready at
    once); its Kubernetes name."""
    compute = KubernetesComputeDriver.from_settings(settings)
    try:
        operation = base.Operation("w", "t", threading.Event())
        assert isinstance(compute.ensure_namespace(operation, namespace), base.Ready)
        name = compute.kubernetes_namespace(namespace.id)
    finally:
        compute.api.close()
    assert name is not None
    return name


@dataclass
class Specs:
    """Fresh Namespace and revision specs (one Namespace, one Agent by default)."""

    namespace: base.NamespaceSpec
    agent_id: str
    number: int = 0

    def revision(
        self,
        *,
        mode: str = "embedded",
        agent_id: str | None = None,
        credential: bool = True,
        document: Mapping[str, Any] | None = None,
    ) -> base.RevisionSpec:
        """A fresh revision of ``agent_id`` (the Agent's by default); ``document``: its
        configuration (a stand-in model by default)."""
        self.number += 1
        return base.RevisionSpec(
            namespace_id=self.namespace.id,
            agent_id=agent_id or self.agent_id,
            revision_id=f"rev_{uuid.uuid4()}",
            revision_number=self.number,
            configuration_generation=self.number,
            configuration_document=(
                {"model": "stand-in", "number": self.number} if document is None else document
            ),
            harness_id="openclaw" if mode == "embedded" else "codex",
            harness_version="1.0.0",
            harness_mode=mode,
            service_principal_id=f"prn_{uuid.uuid4()}",
            credential=base.Credential(CREDENTIAL, "test-fingerprint-key") if credential else None,
        )


def ready_namespace(
    driver: KubernetesComputeDriver, operation: base.Operation, specs: Specs
) -> str:
    """Ensure ``specs.namespace`` (asserting it is ready at once); its Kubernetes name."""
    assert isinstance(driver.ensure_namespace(operation, specs.namespace), base.Ready)
    name = driver.kubernetes_namespace(specs.namespace.id)
    assert name is not None
    return name


def deploy(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    revision: base.RevisionSpec,
) -> base.Activation:
    """One full deploy: prepare, activate, the simulated rollout, activate again."""
    namespace = driver.kubernetes_namespace(revision.namespace_id)
    assert namespace is not None
    prepared = driver.prepare_revision(operation, revision)
    if isinstance(prepared, base.Pending):  # dedicated: its own gateway rolls out first
        kube_api.mark_rollout(namespace, gateway_name(revision))
        prepared = driver.prepare_revision(operation, revision)
    assert isinstance(prepared, base.Ready), prepared
    first = driver.activate_revision(operation, revision)
    if isinstance(first, base.Activation):
        return first
    assert isinstance(first, base.Pending), first
    kube_api.mark_rollout(namespace, gateway_name(revision))
    activation = driver.activate_revision(operation, revision)
    assert isinstance(activation, base.Activation), activation
    return activation


def dedicated_handover(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
    namespace: str,
) -> str:
    """A new dedicated Agent in Kubernetes namespace ``namespace``: its first revision
    deployed, then its second, which waits (pending) until the first is stopped and its Pods
    are gone, then takes over, and the first is retired. The dedicated Agent's id."""
    agent_id = f"agt_{uuid.uuid4()}"
    one = specs.revision(mode="dedicated", agent_id=agent_id)
    deploy(driver, kube_api, operation, one)
    two = specs.revision(mode="dedicated", agent_id=agent_id)
    assert isinstance(driver.prepare_revision(operation, two), base.Pending)
    driver.stop_revision(operation, one)
    kube_api.mark_rollout(namespace, naming.dedicated_deployment(one.revision_id))
    deploy(driver, kube_api, operation, two)
    driver.retire_revision(operation, one)
    return agent_id


def deployed(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> tuple[str, base.RevisionSpec]:
    """A revision deployed in a Namespace made ready: the Kubernetes namespace and the revision."""
    name = ready_namespace(driver, operation, specs)
    revision = specs.revision()
    deploy(driver, kube_api, operation, revision)
    return name, revision


def deployed_with_log(
    settings: Settings, kube_api: FakeKubeAPI, namespace: base.NamespaceSpec, line: str
) -> base.RevisionSpec:
    """A new Agent's revision deployed in ``namespace`` by a driver of ``settings`` (closed
    after), its gateway Pod's log holding ``line``: what a log reader then finds."""
    specs = Specs(namespace=namespace, agent_id=f"agt_{uuid.uuid4()}")
    operation = base.Operation(work_id="work-1", claim_token="token-1", abort=threading.Event())
    driver = KubernetesComputeDriver.from_settings(settings)
    try:
        name, revision = deployed(driver, kube_api, operation, specs)
    finally:
        driver.close()
    [pod] = kube_api.objects("pods", name, naming.selector({naming.AGENT_ID: specs.agent_id}))
    kube_api.write_log(name, str(pod["metadata"]["name"]), line)
    return revision


def gateway_name(revision: base.RevisionSpec) -> str:
    if revision.harness_mode == "dedicated":
        return naming.dedicated_deployment(revision.revision_id)
    return naming.agent_object(revision.agent_id)


def versions(kube_api: FakeKubeAPI, namespace: str) -> dict[tuple[str, str], str]:
    """(plural, name) -> resourceVersion of every object in ``namespace`` and the namespace."""
    found: dict[tuple[str, str], str] = {}
    for plural in (*AGENT_PLURALS, "networkpolicies", "resourcequotas", "limitranges"):
        for obj in kube_api.objects(plural, namespace):
            found[(plural, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
    ns = kube_api.get("namespaces", None, namespace)
    if ns is not None:
        found[("namespaces", namespace)] = ns["metadata"]["resourceVersion"]
    return found


def writes(kube_api: FakeKubeAPI) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in kube_api.journal if r.method not in ("GET",)]


def observed(driver: KubernetesComputeDriver, revision: base.RevisionSpec) -> base.Observed:
    """One bulk observation of ``revision`` alone."""
    return driver.observe_revisions([revision])[revision.revision_id]


def _once_current(driver: KubernetesComputeDriver, revision: base.RevisionSpec) -> base.Observed:
    """``observed``, or not healthy (no code) while the cache is not current yet."""
    try:
        return observed(driver, revision)
    except base.TransientDriverError as exc:
        if exc.code != informer.NOT_OBSERVED:
            raise
        return base.Observed(False)


def observed_healthy(driver: KubernetesComputeDriver, revision: base.RevisionSpec) -> base.Observed:
    """Wait until ``revision`` is observed healthy (the watches deliver what was written)."""
    return wait_for(
        lambda: (seen := _once_current(driver, revision)).healthy and seen,
        timeout=OBSERVED_TIMEOUT,
        message="the revision to be observed healthy",
    )


def observed_with(
    driver: KubernetesComputeDriver, revision: base.RevisionSpec, code: str
) -> base.Observed:
    """Wait until ``revision`` is observed unhealthy with ``code``."""
    return wait_for(
        lambda: (seen := _once_current(driver, revision)).code == code and seen,
        timeout=OBSERVED_TIMEOUT,
        message=f"the revision to be observed {code}",
    )


def watch_requests(kube_api: FakeKubeAPI) -> list[str]:
    """The plural of every watch request in the journal, in order."""
    return [
        request.path.rstrip("/").rsplit("/", 1)[-1]
        for request in kube_api.journal
        if request.method == "GET" and request.query.get("watch", [""])[-1] == "true"
    ]


def wait_watching(kube_api: FakeKubeAPI) -> None:
    """Wait until the journal holds a watch of every kind the observation cache watches."""
    wait_for(
        lambda: set(watch_requests(kube_api)) >= WATCHED_PLURALS,
        timeout=OBSERVED_TIMEOUT,
        message="a watch of every cached kind",
    )
