"""Pure builders of the namespace-level manifests of the ``kubernetes`` driver: the namespace
occ creates (restricted Pod Security), the patches that adopt and release an existing one,
the default-deny and DNS NetworkPolicies, and the optional quota and limits. No I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from occ.drivers.compute.kubernetes import naming

Manifest = naming.Manifest

POD_SECURITY_VERSION: Final = "latest"


def pod_security_labels() -> dict[str, str]:
    """The restricted Pod Security level, enforced, audited and warned about."""
    labels: dict[str, str] = {}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        labels[f"pod-security.kubernetes.io/{mode}-version"] = POD_SECURITY_VERSION
    return labels


def namespace(name: str, namespace_id: str) -> Manifest:
    """A namespace occ creates: occ's labels and the restricted Pod Security level."""
    labels = naming.labels(naming.Role.NAMESPACE, namespace_id=namespace_id)
    labels.update(pod_security_labels())
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": naming.metadata(name, None, labels),
    }


def adoption_patch(namespace_id: str) -> Manifest:
    """The merge patch that marks an existing namespace as adopted (only occ's keys)."""
    return {
        "metadata": {
            "labels": naming.labels(naming.Role.NAMESPACE, namespace_id=namespace_id),
            "annotations": {naming.ADOPTED: "true"},
        }
    }


def release_patch() -> Manifest:
    """The merge patch that removes occ's keys from an adopted namespace again."""
    keys = (naming.MANAGED_BY, naming.NAMESPACE_ID, naming.ROLE)
    return {
        "metadata": {
            "labels": dict.fromkeys(keys),
            "annotations": {naming.ADOPTED: None},
        }
    }


def default_deny(namespace_name: str, namespace_id: str, *, adopted: bool) -> Manifest:
    """Deny all ingress and egress; in an adopted namespace only for occ's pods."""
    pods: Manifest = {"matchLabels": {naming.MANAGED_BY: naming.MANAGER}} if adopted else {}
    return _network_policy(
        naming.DEFAULT_DENY,
        namespace_name,
        namespace_id,
        {"podSelector": pods, "policyTypes": ["Ingress", "Egress"]},
    )


def allow_dns(namespace_name: str, namespace_id: str) -> Manifest:
    """Let occ's pods resolve names through the cluster DNS (and nothing else)."""
    dns_pods = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    return _network_policy(
        naming.ALLOW_DNS,
        namespace_name,
        namespace_id,
        {
            "podSelector": {"matchLabels": {naming.MANAGED_BY: naming.MANAGER}},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [dns_pods],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                }
            ],
        },
    )


def _network_policy(name: str, namespace_name: str, namespace_id: str, spec: Manifest) -> Manifest:
    labels = naming.labels(naming.Role.NETWORK_POLICY, namespace_id=namespace_id)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": naming.metadata(name, namespace_name, labels),
        "spec": spec,
    }


def resource_quota(namespace_name: str, namespace_id: str, hard: Mapping[str, str]) -> Manifest:
    labels = naming.labels(naming.Role.QUOTA, namespace_id=namespace_id)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": naming.metadata(naming.RESOURCE_QUOTA, namespace_name, labels),
        "spec": {"hard": {key: str(value) for key, value in hard.items()}},
    }


def limit_range(
    namespace_name: str, namespace_id: str, limits: Mapping[str, Mapping[str, str]]
) -> Manifest:
    """A Container LimitRange from ``{"default": {...}, "defaultRequest": {...}, "max": ...}``."""
    labels = naming.labels(naming.Role.LIMITS, namespace_id=namespace_id)
    item: Manifest = {"type": "Container"}
    for key in ("default", "defaultRequest", "max", "min"):
        if key in limits:
            item[key] = {name: str(value) for name, value in limits[key].items()}
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": naming.metadata(naming.LIMIT_RANGE, namespace_name, labels),
        "spec": {"limits": [item]},
    }
