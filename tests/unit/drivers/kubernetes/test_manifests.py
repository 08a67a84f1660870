"""Manifest builders: names, labels, hardening, immutability, and schema validity (every
supported version, 1.30 to 1.34)."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    agent_policies,
    manifests,
    namespace_manifests,
    naming,
    policies,
    rbac,
)
from occ.foundation import fingerprints
from tests.support import kubernetes_schemas

OPTIONS = manifests.GatewayOptions(
    image="registry.example/gateway:1",
    storage_class="fast",
    token_audience="https://tools.example/agents",
    token_lifetime_s=900,
)
SUPPORTED_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34")
"""From ``access.MINIMUM_VERSION`` to the newest the fake API server speaks."""
NO_TOKEN = manifests.GatewayOptions(image="registry.example/gateway:1", token_audience="")


def _revision(mode: str = "embedded", **changes: Any) -> base.RevisionSpec:
    values: dict[str, Any] = {
        "namespace_id": f"ns_{uuid.uuid4()}",
        "agent_id": f"agt_{uuid.uuid4()}",
        "revision_id": f"rev_{uuid.uuid4()}",
        "revision_number": 3,
        "configuration_generation": 7,
        "configuration_document": {"model": "m", "nested": {"b": 2, "a": 1}},
        "harness_id": "openclaw" if mode == "embedded" else "codex",
        "harness_version": "1.0.0",
        "harness_mode": mode,
        "service_principal_id": f"prn_{uuid.uuid4()}",
        "credential": base.Credential("sk-very-secret", "test-fingerprint-key"),
    }
    values.update(changes)
    return base.RevisionSpec(**values)


def _every_manifest(revision: base.RevisionSpec) -> list[dict[str, Any]]:
    ns = "occ-0123456789abcde"
    assert revision.credential is not None
    return [
        namespace_manifests.namespace(ns, revision.namespace_id),
        namespace_manifests.default_deny(ns, revision.namespace_id, adopted=False),
        namespace_manifests.default_deny(ns, revision.namespace_id, adopted=True),
        namespace_manifests.allow_dns(ns, revision.namespace_id),
        namespace_manifests.resource_quota(
            ns, revision.namespace_id, {"pods": "20", "requests.cpu": "4"}
        ),
        namespace_manifests.limit_range(
            ns, revision.namespace_id, {"default": {"cpu": "500m"}, "max": {"memory": "1Gi"}}
        ),
        manifests.configuration_map(revision, ns),
        manifests.credential_secret(revision, ns, revision.credential),
        manifests.service_account(revision, ns),
        manifests.state_claim(revision, ns, OPTIONS),
        manifests.service(revision, ns, selects=revision.revision_id),
        manifests.service(revision, ns, selects=None),
        manifests.gateway_deployment(revision, ns, OPTIONS),
        manifests.gateway_deployment(
            revision, ns, OPTIONS, replicas=0, environment={"TOOL_TOKEN": "opaque-abc"}
        ),
        manifests.gateway_deployment(revision, ns, NO_TOKEN),
    ]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("mode", ["embedded", "dedicated"])
def test_every_manifest_is_valid_for_every_supported_version(mode: str, version: str) -> None:
    revision = _revision(mode)
    ns = "occ-0123456789abcde"
    network = policies.NetworkOptions(
        callers=({"namespace": {"team": "edge"}, "pods": {"app": "proxy"}},),
        authentication_egress=("10.0.0.0/8",),
    )
    every = [
        *_every_manifest(revision),
        agent_policies.runtime(revision, ns, network.callers, manifests.GATEWAY_PORT),
        agent_policies.authentication(
            revision, ns, network.authentication_egress, open_egress=True
        ),
        agent_policies.authentication(revision, ns, (), open_egress=False),
        *rbac.provisioning([ns]),
    ]
    for manifest in every:
        kubernetes_schemas.validate(manifest, version)


@pytest.mark.parametrize("mode", ["embedded", "dedicated"])
def test_every_manifest_carries_occs_labels(mode: str) -> None:
    revision = _revision(mode)
    for manifest in _every_manifest(revision):
        labels = manifest["metadata"]["labels"]
        assert labels[naming.MANAGED_BY] == "occ", manifest["kind"]
        assert labels[naming.NAMESPACE_ID] == revision.namespace_id
        assert labels[naming.ROLE]
        if manifest["kind"] in ("ConfigMap", "Secret"):
            assert labels[naming.REVISION_ID] == revision.revision_id
        if manifest["kind"] in (
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "PersistentVolumeClaim",
            "Service",
            "Deployment",
        ):
            assert labels[naming.AGENT_ID] == revision.agent_id


def test_namespace_name_is_the_prefix_and_15_hex_of_the_id_hash() -> None:
    name = naming.kubernetes_namespace("occ-", "ns_00000000-0000-4000-8000-000000000000")
    assert name.startswith("occ-") and len(name) == 4 + 15
    assert all(c in "0123456789abcdef" for c in name[4:])
    assert name == naming.kubernetes_namespace("occ-", "ns_00000000-0000-4000-8000-000000000000")


def test_created_namespaces_enforce_restricted_pod_security() -> None:
    labels = namespace_manifests.namespace("occ-x", "ns_1")["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert labels["pod-security.kubernetes.io/enforce-version"]


def test_gateway_is_one_hardened_replica_with_recreate() -> None:
    revision = _revision()
    deployment = manifests.gateway_deployment(revision, "ns", OPTIONS)
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    assert pod["serviceAccountName"] == naming.agent_object(revision.agent_id)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["requests"] and container["resources"]["limits"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/healthz"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/tmp"] == "tmp"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes["tmp"]
    assert volumes["credential"]["secret"]["secretName"] == naming.credential_secret(
        revision.revision_id
    )
    assert (
        spec["template"]["metadata"]["annotations"][naming.REVISION_ANNOTATION]
        == revision.revision_id
    )


def test_embedded_selector_is_stable_across_revisions_and_dedicated_is_per_revision() -> None:
    first = _revision()
    second = _revision(
        namespace_id=first.namespace_id, agent_id=first.agent_id, revision_id=f"rev_{uuid.uuid4()}"
    )
    selectors = [
        manifests.gateway_deployment(r, "ns", OPTIONS)["spec"]["selector"] for r in (first, second)
    ]
    assert selectors[0] == selectors[1]
    assert naming.REVISION_ID not in selectors[0]["matchLabels"]
    names = {manifests.deployment_name(r) for r in (first, second)}
    assert names == {naming.agent_object(first.agent_id)}

    dedicated = _revision("dedicated", agent_id=first.agent_id)
    deployment = manifests.gateway_deployment(dedicated, "ns", OPTIONS)
    assert deployment["metadata"]["name"] == naming.slug(dedicated.revision_id)
    assert deployment["spec"]["selector"]["matchLabels"][naming.REVISION_ID] == (
        dedicated.revision_id
    )
    inactive = manifests.service(dedicated, "ns", selects=None)["spec"]["selector"]
    assert inactive[naming.REVISION_ID] == ""  # selects no pod until activation


def test_snapshot_is_immutable_and_per_revision() -> None:
    revision = _revision()
    config_map = manifests.configuration_map(revision, "ns")
    assert config_map["immutable"] is True
    assert config_map["metadata"]["name"] == naming.configuration_map(revision.revision_id)
    assert json.loads(config_map["data"]["configuration.json"]) == {
        "model": "m",
        "nested": {"a": 1, "b": 2},
    }


def test_the_credential_value_is_only_in_the_secrets_data() -> None:
    revision = _revision()
    assert revision.credential is not None
    secret = manifests.credential_secret(revision, "ns", revision.credential)
    assert secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["credential"]).decode() == "sk-very-secret"
    assert secret["metadata"]["annotations"][naming.FINGERPRINT_ANNOTATION] == (
        revision.credential.fingerprint
    )
    # the runtime's key travels beside the value, so the gateway shows the same fingerprint
    key = base64.b64decode(secret["data"][fingerprints.KEY_FILE]).decode()
    assert key == revision.credential.fingerprint_key
    assert fingerprints.of("sk-very-secret", key) == revision.credential.fingerprint
    assert naming.FINGERPRINT_KEY_ANNOTATION not in secret["metadata"]["annotations"]
    named = manifests.credential_secret(revision, "ns", revision.credential, "key-id-1")
    assert named["metadata"]["annotations"][naming.FINGERPRINT_KEY_ANNOTATION] == "key-id-1"
    for manifest in _every_manifest(revision):
        shown = {k: v for k, v in manifest.items() if manifest["kind"] != "Secret" or k != "data"}
        text = json.dumps(shown)
        assert "sk-very-secret" not in text
        assert base64.b64encode(b"sk-very-secret").decode() not in text


def test_endpoint_is_the_services_cluster_dns_name() -> None:
    revision = _revision()
    assert manifests.endpoint(revision, "occ-abc") == (
        f"http://{naming.agent_object(revision.agent_id)}.occ-abc.svc.cluster.local:8080"
    )


def test_state_claim_is_read_write_once_in_the_configured_class() -> None:
    claim = manifests.state_claim(_revision(), "ns", OPTIONS)
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["storageClassName"] == "fast"
    unset = manifests.state_claim(_revision(), "ns", manifests.GatewayOptions(image="i"))
    assert "storageClassName" not in unset["spec"]


def test_ids_that_are_not_occ_ids_are_refused_as_names() -> None:
    with pytest.raises(ValueError, match="not an occ"):
        naming.slug("agt_../../etc")


def test_the_agents_identity_is_a_projected_audience_scoped_short_lived_token() -> None:
    revision = _revision()
    pod = manifests.gateway_deployment(revision, "ns", OPTIONS)["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == naming.agent_object(revision.agent_id)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["identity"]["projected"]["sources"] == [
        {
            "serviceAccountToken": {
                "audience": "https://tools.example/agents",
                "expirationSeconds": 900,
                "path": "token",
            }
        }
    ]
    mounted = [
        (container["name"], mount)
        for container in (*pod["containers"], *pod.get("initContainers", []))
        for mount in container["volumeMounts"]
        if mount["name"] == "identity"
    ]
    assert mounted == [
        ("gateway", {"name": "identity", "mountPath": "/var/run/occ/identity", "readOnly": True})
    ]
    bare = manifests.gateway_deployment(revision, "ns", NO_TOKEN)["spec"]["template"]["spec"]
    assert "identity" not in {v["name"] for v in bare["volumes"]}
    assert "identity" not in str(bare["containers"])


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_gateway_validates_for_every_supported_version(version: str) -> None:
    for mode in ("embedded", "dedicated"):
        revision = _revision(mode)
        for options in (OPTIONS, NO_TOKEN):
            kubernetes_schemas.validate(
                manifests.gateway_deployment(revision, "occ-0123456789abcde", options), version
            )
