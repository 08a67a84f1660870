"""Pure builders of the manifests of an Agent's revisions, in camelCase wire form (the
namespace-level ones are ``namespace_manifests``).

Each function turns occ values (a Namespace, a revision, the gateway options) into one plain
dict that the Kubernetes API accepts as is: no client models, no I/O, no defaults left for
the server to pick where occ has an opinion. The harness credential appears in exactly one
place, the ``data`` of the revision's Secret; every other manifest refers to that Secret by
name, and may carry the credential's fingerprint, never its value.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from occ.drivers.compute import base, standin
from occ.drivers.compute.kubernetes import naming
from occ.foundation import fingerprints

GATEWAY_PORT: Final = 8080
"""Container and Service port of every gateway."""
GATEWAY_UID: Final = 10001
CONFIGURATION_DIR: Final = "/etc/occ/configuration"
CONFIGURATION_FILE: Final = "configuration.json"
CREDENTIAL_DIR: Final = "/var/run/occ/credential"
CREDENTIAL_FILE: Final = "credential"
STATE_DIR: Final = "/var/lib/occ"
IDENTITY_DIR: Final = "/var/run/occ/identity"
IDENTITY_FILE: Final = "token"
"""Where the gateway reads the Agent's projected ServiceAccount token."""

Manifest = naming.Manifest


@dataclass(frozen=True)
class GatewayOptions:
    """What every gateway workload shares (from settings)."""

    image: str
    storage_class: str | None = None
    state_size: str = "1Gi"
    requests: Mapping[str, str] = field(default_factory=lambda: {"cpu": "100m", "memory": "128Mi"})
    limits: Mapping[str, str] = field(default_factory=lambda: {"cpu": "500m", "memory": "256Mi"})
    progress_deadline_s: int = 600
    fingerprint_key_id: str | None = None
    """The id of the installation's fingerprint key (``fingerprints.key_id``): annotated on each
    credential Secret, and a Secret annotated with another is repaired (``None``: not checked)."""
    token_audience: str = "occ-agent"  # noqa: S105 (an audience, not a secret)
    """Audience of the Agent's projected ServiceAccount token (empty: none mounted)."""
    token_lifetime_s: int = 3600


def mode_of(revision: base.RevisionSpec) -> str:
    """``dedicated`` for a dedicated harness mode, else ``embedded``."""
    return naming.DEDICATED if revision.harness_mode == naming.DEDICATED else naming.EMBEDDED


# -- revision level ------------------------------------------------------------------------


def configuration_map(revision: base.RevisionSpec, namespace_name: str) -> Manifest:
    """The revision's immutable configuration snapshot."""
    text = standin.configuration_text(revision.configuration_document)
    labels = revision_labels(naming.Role.CONFIGURATION, revision)
    annotations = {naming.CONTENT_ANNOTATION: hashlib.sha256(text.encode()).hexdigest()}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": naming.metadata(
            naming.configuration_map(revision.revision_id), namespace_name, labels, annotations
        ),
        "immutable": True,
        "data": {CONFIGURATION_FILE: text},
    }


def credential_secret(
    revision: base.RevisionSpec,
    namespace_name: str,
    credential: base.Credential,
    fingerprint_key_id: str | None = None,
) -> Manifest:
    """The revision's harness credential: the only manifest that holds its value, with the
    revision's fingerprint key beside it; annotated with the keyed fingerprint and the id of
    the installation key that made it (``fingerprint_key_id``)."""
    labels = revision_labels(naming.Role.CREDENTIAL, revision)
    annotations = {naming.FINGERPRINT_ANNOTATION: credential.fingerprint}
    if fingerprint_key_id is not None:
        annotations[naming.FINGERPRINT_KEY_ANNOTATION] = fingerprint_key_id
    encoded = base64.b64encode(credential.value.encode()).decode("ascii")
    key = base64.b64encode(credential.fingerprint_key.encode()).decode("ascii")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": naming.metadata(
            naming.credential_secret(revision.revision_id), namespace_name, labels, annotations
        ),
        "type": "Opaque",
        "data": {CREDENTIAL_FILE: encoded, fingerprints.KEY_FILE: key},
    }


def service_account(revision: base.RevisionSpec, namespace_name: str) -> Manifest:
    labels = _agent_labels(naming.Role.SERVICE_ACCOUNT, revision)
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": naming.metadata(naming.agent_object(revision.agent_id), namespace_name, labels),
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
        "metadata": naming.metadata(naming.state_claim(revision.agent_id), namespace_name, labels),
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
        "metadata": naming.metadata(naming.agent_object(revision.agent_id), namespace_name, labels),
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


def gateway_labels(revision: base.RevisionSpec) -> dict[str, str]:
    """The labels of the gateway Deployment running ``revision``."""
    mode = mode_of(revision)
    return naming.labels(
        naming.Role.GATEWAY,
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        # the embedded Deployment outlives its revisions: only its pods name one
        revision_id=revision.revision_id if mode == naming.DEDICATED else None,
        mode=mode,
    )


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
        "metadata": naming.metadata(
            deployment_name(revision), namespace_name, gateway_labels(revision)
        ),
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
    volumes: list[Manifest] = [
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
    ]
    if options.token_audience:
        # the Agent's identity: only this container mounts it (no automounted token anywhere)
        container["volumeMounts"].append(
            {"name": "identity", "mountPath": IDENTITY_DIR, "readOnly": True}
        )
        volumes.append(identity_volume(options))
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
        "volumes": volumes,
    }


def identity_volume(options: GatewayOptions) -> Manifest:
    """The projected, audience-scoped, short-lived token of the Agent's ServiceAccount."""
    return {
        "name": "identity",
        "projected": {
            "defaultMode": 0o440,
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": options.token_audience,
                        "expirationSeconds": options.token_lifetime_s,
                        "path": IDENTITY_FILE,
                    }
                }
            ],
        },
    }


def _gateway_arguments(revision: base.RevisionSpec) -> list[str]:
    """Arguments of the gateway image's entrypoint (the stand-in gateway's options)."""
    return [
        "--host",
        "0.0.0.0",  # noqa: S104 (inside the pod; NetworkPolicies fence it)
        "--port",
        str(GATEWAY_PORT),
        *standin.revision_arguments(revision, config=f"{CONFIGURATION_DIR}/{CONFIGURATION_FILE}"),
        "--credential-file",
        f"{CREDENTIAL_DIR}/{CREDENTIAL_FILE}",
    ]


def _agent_labels(role: str, revision: base.RevisionSpec) -> dict[str, str]:
    return naming.labels(role, namespace_id=revision.namespace_id, agent_id=revision.agent_id)


def revision_labels(role: str, revision: base.RevisionSpec) -> dict[str, str]:
    """The labels of an object of ``revision`` that plays ``role`` (its ConfigMap, its Secret)."""
    return naming.labels(
        role,
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        revision_id=revision.revision_id,
    )
