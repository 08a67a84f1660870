"""A deployed Agent's objects as the cluster holds them after a finished deploy, put straight
into the fake Kubernetes API server's store: for the benchmarks that need thousands of them.

Built by the kubernetes driver's own manifest builders: the revision's ConfigMap and Secret,
the Agent's ServiceAccount, volume and Service, its gateway Deployment rolled out, and an
EndpointSlice with a ready endpoint behind the Service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import manifests, namespace_manifests, watched
from tests.support.kube_api import FakeKubeAPI

DONE: Final = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}


def agent_objects(
    revision: base.RevisionSpec, namespace: str, options: manifests.GatewayOptions
) -> Iterator[tuple[str, Any]]:
    """(plural, object) of one deployed Agent, as the cluster holds them."""
    credential = base.Credential("bench-credential", "test-fingerprint-key")
    yield "configmaps", manifests.configuration_map(revision, namespace)
    yield "secrets", manifests.credential_secret(revision, namespace, credential)
    yield "serviceaccounts", manifests.service_account(revision, namespace)
    yield "persistentvolumeclaims", manifests.state_claim(revision, namespace, options)
    service = manifests.service(revision, namespace, selects=revision.revision_id)
    yield "services", service
    deployment = manifests.gateway_deployment(revision, namespace, options)
    deployment["status"] = dict(DONE)
    yield "deployments", deployment
    name = service["metadata"]["name"]
    yield (
        "endpointslices",
        {
            "metadata": {
                "name": f"{name}-bench",
                "namespace": namespace,
                "labels": {**service["metadata"]["labels"], watched.SERVICE_NAME: name},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.0.10"], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": manifests.GATEWAY_PORT, "protocol": "TCP"}],
        },
    )


def seed_namespace(fake: FakeKubeAPI, namespace: str, namespace_id: str) -> None:
    """The Kubernetes namespace of an occ Namespace."""
    fake.seed("namespaces", namespace_manifests.namespace(namespace, namespace_id))


def seed_agent(
    fake: FakeKubeAPI,
    revision: base.RevisionSpec,
    namespace: str,
    options: manifests.GatewayOptions,
) -> None:
    """One deployed Agent's objects (see the module)."""
    for plural, obj in agent_objects(revision, namespace, options):
        fake.seed(plural, obj)
