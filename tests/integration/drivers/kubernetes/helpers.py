"""Helpers of the ``kubernetes`` driver tests: specs, a full deploy, object versions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, naming
from tests.support.kube_api import FakeKubeAPI

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


@dataclass
class Specs:
    """Fresh Namespace and revision specs (one Namespace, one Agent by default)."""

    namespace: base.NamespaceSpec
    agent_id: str
    number: int = 0

    def revision(
        self, *, mode: str = "embedded", agent_id: str | None = None, credential: bool = True
    ) -> base.RevisionSpec:
        self.number += 1
        return base.RevisionSpec(
            namespace_id=self.namespace.id,
            agent_id=agent_id or self.agent_id,
            revision_id=f"rev_{uuid.uuid4()}",
            revision_number=self.number,
            configuration_generation=self.number,
            configuration_document={"model": "stand-in", "number": self.number},
            harness_id="openclaw" if mode == "embedded" else "codex",
            harness_version="1.0.0",
            harness_mode=mode,
            service_principal_id=f"prn_{uuid.uuid4()}",
            credential=base.Credential(CREDENTIAL) if credential else None,
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
