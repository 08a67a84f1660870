"""A deployed Agent's objects as the cluster holds them after a finished deploy, put straight
into the fake Kubernetes API server's store: for the benchmarks that need thousands of them.

Built by the kubernetes driver's own manifest builders: the revision's ConfigMap and Secret,
the Agent's ServiceAccount, volume and Service, its gateway Deployment rolled out with its
ready Pod, and (once per namespace) the EndpointSlices the cluster's controller derives from
the Pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import manifests, namespace_manifests
from tests.support.kube_api import FakeKubeAPI

DONE: Final = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}


def first_revision(
    namespace_id: str,
    *,
    agent_id: str,
    revision_id: str,
    service_principal_id: str,
    model: str,
) -> base.RevisionSpec:
    """An embedded openclaw Agent's first revision, as the kubernetes driver's spec."""
    return base.RevisionSpec(
        namespace_id=namespace_id,
        agent_id=agent_id,
        revision_id=revision_id,
        revision_number=1,
        configuration_generation=1,
        configuration_document={"model": model},
        harness_id="openclaw",
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id=service_principal_id,
    )


def agent_objects(
    revision: base.RevisionSpec, namespace: str, options: manifests.GatewayOptions
) -> Iterator[tuple[str, Any]]:
    """(plural, object) of one deployed Agent, as the cluster holds them."""
    credential = base.Credential("bench-credential", "test-fingerprint-key")
    yield "configmaps", manifests.configuration_map(revision, namespace)
    yield (
        "secrets",
        manifests.credential_secret(revision, namespace, credential, options.fingerprint_key_id),
    )
    yield "serviceaccounts", manifests.service_account(revision, namespace)
    yield "persistentvolumeclaims", manifests.state_claim(revision, namespace, options)
    service = manifests.service(revision, namespace, selects=revision.revision_id)
    yield "services", service
    deployment = manifests.gateway_deployment(revision, namespace, options)
    deployment["status"] = dict(DONE)
    yield "deployments", deployment


def seed_namespace(fake: FakeKubeAPI, namespace: str, namespace_id: str) -> None:
    """The Kubernetes namespace of an occ Namespace."""
    fake.seed("namespaces", namespace_manifests.namespace(namespace, namespace_id))


def seed_agent(
    fake: FakeKubeAPI,
    revision: base.RevisionSpec,
    namespace: str,
    options: manifests.GatewayOptions,
) -> None:
    """One deployed Agent's objects and its gateway's ready Pod (see the module); its
    EndpointSlice comes with ``seed_endpoints``."""
    for plural, obj in agent_objects(revision, namespace, options):
        fake.seed(plural, obj)
    fake.seed_rollout(namespace, manifests.deployment_name(revision))


def seed_endpoints(fake: FakeKubeAPI, namespace: str) -> None:
    """The EndpointSlices of a namespace's seeded Services, listing their ready Pods: as the
    cluster's controller keeps them, so that a later change in the namespace (a deleted
    Deployment) leaves every other Agent's endpoint as it was."""
    fake.seed_endpoint_slices(namespace)
