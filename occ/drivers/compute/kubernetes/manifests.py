"""Pure builders of the manifests the ``kubernetes`` driver applies, in camelCase wire form.

Each function turns occ values (a Namespace, a revision, the gateway options) into one plain
dict that the Kubernetes API accepts as is: no client models, no I/O, no defaults left for
the server to pick where occ has an opinion. The harness credential appears in exactly one
place, the ``data`` of the revision's Secret; every other manifest refers to that Secret by
name, and may carry the credential's fingerprint, never its value.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import naming

GATEWAY_PORT: Final = 8080
"""Container and Service port of every gateway."""
GATEWAY_UID: Final = 10001
CONFIGURATION_DIR: Final = "/etc/occ/configuration"
CONFIGURATION_FILE: Final = "configuration.json"
CREDENTIAL_DIR: Final = "/var/run/occ/credential"
CREDENTIAL_FILE: Final = "credential"
STATE_DIR: Final = "/var/lib/occ"
POD_SECURITY_VERSION: Final = "latest"

Manifest = dict[str, Any]


@dataclass(frozen=True)
class GatewayOptions:
    """What every gateway workload shares (from settings)."""

    image: str
    storage_class: str | None = None
    state_size: str = "1Gi"
    requests: Mapping[str, str] = field(default_factory=lambda: {"cpu": "100m", "memory": "128Mi"})
    limits: Mapping[str, str] = field(default_factory=lambda: {"cpu": "500m", "memory": "256Mi"})
    progress_deadline_s: int = 600


def _metadata(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
) -> Manifest:
    metadata: Manifest = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = dict(annotations)
    return metadata


def mode_of(revision: base.RevisionSpec) -> str:
    """``dedicated`` for a dedicated harness mode, else ``embedded``."""
    return naming.DEDICATED if revision.harness_mode == naming.DEDICATED else naming.EMBEDDED


# -- Namespace level -----------------------------------------------------------------------


def namespace(name: str, namespace_id: str) -> Manifest:
    """A namespace occ creates: occ's labels and the restricted Pod Security level."""
    labels = naming.labels(naming.Role.NAMESPACE, namespace_id=namespace_id)
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        labels[f"pod-security.kubernetes.io/{mode}-version"] = POD_SECURITY_VERSION
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(name, None, labels)}


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
        "metadata": _metadata(name, namespace_name, labels),
        "spec": spec,
    }


def resource_quota(namespace_name: str, namespace_id: str, hard: Mapping[str, str]) -> Manifest:
    labels = naming.labels(naming.Role.QUOTA, namespace_id=namespace_id)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _metadata(naming.RESOURCE_QUOTA, namespace_name, labels),
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
        "metadata": _metadata(naming.LIMIT_RANGE, namespace_name, labels),
        "spec": {"limits": [item]},
    }


# -- revision level ------------------------------------------------------------------------


def configuration_text(document: Mapping[str, Any]) -> str:
    """The snapshot file's content (stable: sorted keys)."""
    return json.dumps(document, indent=2, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def configuration_map(revision: base.RevisionSpec, namespace_name: str) -> Manifest:
    """The revision's immutable configuration snapshot."""
    text = configuration_text(revision.configuration_document)
    labels = _revision_labels(naming.Role.CONFIGURATION, revision)
    annotations = {naming.CONTENT_ANNOTATION: hashlib.sha256(text.encode()).hexdigest()}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(
            naming.configuration_map(revision.revision_id), namespace_name, labels, annotations
        ),
        "immutable": True,
        "data": {CONFIGURATION_FILE: text},
    }


def credential_secret(
    revision: base.RevisionSpec, namespace_name: str, credential: base.Credential
) -> Manifest:
    """The revision's harness credential: the only manifest that holds its value."""
    labels = _revision_labels(naming.Role.CREDENTIAL, revision)
    annotations = {naming.FINGERPRINT_ANNOTATION: credential.fingerprint}
    encoded = base64.b64encode(credential.value.encode()).decode("ascii")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(
            naming.credential_secret(revision.revision_id), namespace_name, labels, annotations
        ),
        "type": "Opaque",
        "data": {CREDENTIAL_FILE: encoded},
    }


def service_account(revision: base.RevisionSpec, namespace_name: str) -> Manifest:
    labels = _agent_labels(naming.Role.SERVICE_ACCOUNT, revision)
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(naming.agent_object(revision.agent_id), namespace_name, labels),
        "automountServiceAccountToken": False,
    }


def state_claim(
    revision: base.RevisionSpec, namespace_name: str, options: GatewayOptions
) -> Manifest:
    """The Agent's gateway volume (ReadWriteOnce; survives revisions and stops)."""
    labels = _agent_labels(naming.Role.STATE, revision)
    spec: Manifest = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": options.state_size}},
    }
    if options.storage_class:
        spec["storageClassName"] = options.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _metadata(naming.state_claim(revision.agent_id), namespace_name, labels),
        "spec": spec,
    }


def service(revision: base.RevisionSpec, namespace_name: str, *, selects: str | None) -> Manifest:
    """The Agent's ClusterIP Service, selecting ``selects``' gateway pods.

    For an embedded revision the selector is the Agent's stable one whatever ``selects`` is;
    for a dedicated one, ``selects=None`` selects nothing yet (a prepared, inactive revision).
    """
    mode = mode_of(revision)
    labels = _agent_labels(naming.Role.SERVICE, revision)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(naming.agent_object(revision.agent_id), namespace_name, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": naming.gateway_selector(revision.agent_id, mode, selects),
            "ports": [
                {"name": "http", "protocol": "TCP", "port": GATEWAY_PORT, "targetPort": "http"}
            ],
        },
    }


def endpoint(revision: base.RevisionSpec, namespace_name: str) -> str:
    """The Agent's stable endpoint: its Service's cluster DNS name."""
    name = naming.agent_object(revision.agent_id)
    return f"http://{name}.{namespace_name}.svc.cluster.local:{GATEWAY_PORT}"


def deployment_name(revision: base.RevisionSpec) -> str:
    """The gateway Deployment running ``revision``: the Agent's, or the revision's own."""
    if mode_of(revision) == naming.DEDICATED:
        return naming.dedicated_deployment(revision.revision_id)
    return naming.agent_object(revision.agent_id)


def gateway_deployment(
    revision: base.RevisionSpec,
    namespace_name: str,
    options: GatewayOptions,
    *,
    replicas: int = 1,
    environment: Mapping[str, str] | None = None,
) -> Manifest:
    """The hardened single-replica gateway Deployment running ``revision``.

    ``environment`` holds the lifecycle hooks' validated opaque placeholders (never secrets).
    """
    mode = mode_of(revision)
    match = naming.gateway_selector(revision.agent_id, mode, revision.revision_id)
    owner_labels = naming.labels(
        naming.Role.GATEWAY,
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        # the embedded Deployment outlives its revisions: only its pods name one
        revision_id=revision.revision_id if mode == naming.DEDICATED else None,
        mode=mode,
    )
    pod_labels = {
        **naming.labels(
            naming.Role.GATEWAY,
            namespace_id=revision.namespace_id,
            agent_id=revision.agent_id,
            revision_id=revision.revision_id,
            mode=mode,
        ),
        **match,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(deployment_name(revision), namespace_name, owner_labels),
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 2,
            "progressDeadlineSeconds": options.progress_deadline_s,
            "selector": {"matchLabels": match},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {naming.REVISION_ANNOTATION: revision.revision_id},
                },
                "spec": _pod_spec(revision, options, environment or {}),
            },
        },
    }


def _pod_spec(
    revision: base.RevisionSpec, options: GatewayOptions, environment: Mapping[str, str]
) -> Manifest:
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "timeoutSeconds": 2}
    container: Manifest = {
        "name": "gateway",
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": _gateway_arguments(revision),
        "ports": [{"name": "http", "containerPort": GATEWAY_PORT, "protocol": "TCP"}],
        "resources": {"requests": dict(options.requests), "limits": dict(options.limits)},
        "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {
            **probe,
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "configuration", "mountPath": CONFIGURATION_DIR, "readOnly": True},
            {"name": "credential", "mountPath": CREDENTIAL_DIR, "readOnly": True},
            {"name": "state", "mountPath": STATE_DIR},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 (an emptyDir of the pod)
        ],
    }
    if environment:
        container["env"] = [{"name": k, "value": v} for k, v in sorted(environment.items())]
    return {
        "serviceAccountName": naming.agent_object(revision.agent_id),
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 30,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": GATEWAY_UID,
            "runAsGroup": GATEWAY_UID,
            "fsGroup": GATEWAY_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": [
            {
                "name": "configuration",
                "configMap": {"name": naming.configuration_map(revision.revision_id)},
            },
            {
                "name": "credential",
                # group-readable: the gateway runs as GATEWAY_UID with fsGroup GATEWAY_UID
                "secret": {
                    "secretName": naming.credential_secret(revision.revision_id),
                    "defaultMode": 0o440,
                },
            },
            {
                "name": "state",
                "persistentVolumeClaim": {"claimName": naming.state_claim(revision.agent_id)},
            },
            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        ],
    }


def _gateway_arguments(revision: base.RevisionSpec) -> list[str]:
    """Arguments of the gateway image's entrypoint (the stand-in gateway's options)."""
    return [
        "--host",
        "0.0.0.0",  # noqa: S104 (inside the pod; NetworkPolicies fence it)
        "--port",
        str(GATEWAY_PORT),
        "--revision-id",
        revision.revision_id,
        "--agent-id",
        revision.agent_id,
        "--generation",
        str(revision.configuration_generation),
        "--config",
        f"{CONFIGURATION_DIR}/{CONFIGURATION_FILE}",
        "--credential-file",
        f"{CREDENTIAL_DIR}/{CREDENTIAL_FILE}",
    ]


def _agent_labels(role: str, revision: base.RevisionSpec) -> dict[str, str]:
    return naming.labels(role, namespace_id=revision.namespace_id, agent_id=revision.agent_id)


def _revision_labels(role: str, revision: base.RevisionSpec) -> dict[str, str]:
    return naming.labels(
        role,
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        revision_id=revision.revision_id,
    )
