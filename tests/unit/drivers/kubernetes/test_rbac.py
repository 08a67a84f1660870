"""The tenant-scoped Roles and RoleBindings: exactly the namespaced access the driver checks
(and the API's log read), valid for every supported API server version, and what
``occ kubernetes rbac`` prints."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from occ.cli import cli
from occ.drivers.compute.kubernetes import access, rbac
from tests.support import kubernetes_schemas

SUPPORTED_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34")
"""From ``access.MINIMUM_VERSION`` to the newest the fake API server speaks."""


def _expanded(rules: list[dict[str, list[str]]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_role_grants_exactly_the_namespaced_access_and_no_wildcard() -> None:
    role = rbac.role("tenant-a")
    needed = {(kind.group, kind.resource, verb) for verb, kind in access.NAMESPACED_ACCESS}
    assert _expanded(role["rules"]) == needed
    assert "*" not in str(role["rules"])
    assert not any("resourceNames" in rule for rule in role["rules"])
    # nothing occ never needs in a tenant's namespace: quotas, limit ranges, namespace writes
    assert ("", "resourcequotas", "get") not in needed
    assert ("", "namespaces", "create") not in needed
    assert ("", "namespaces", "delete") not in needed


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_provisioning_manifests_validate_strictly(version: str) -> None:
    for manifest in rbac.provisioning(["tenant-a", "tenant-b"], with_namespace=True):
        kubernetes_schemas.validate(manifest, version)


def test_the_binding_names_the_workers_service_account_and_the_role() -> None:
    binding = rbac.role_binding("tenant-a", subject_namespace="ops", subject_name="occ")
    assert binding["metadata"]["namespace"] == "tenant-a"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": rbac.ROLE_NAME,
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "occ", "namespace": "ops"}]


def test_occ_kubernetes_rbac_prints_a_role_and_binding_per_namespace() -> None:
    result = CliRunner().invoke(
        cli,
        ["kubernetes", "rbac", "--namespace", "tenant-a", "--namespace", "tenant-b"],
    )
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.output))
    assert documents == rbac.provisioning(["tenant-a", "tenant-b"])
    assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in documents] == [
        (kind, name, namespace)
        for namespace in ("tenant-a", "tenant-b")
        for name in (rbac.ROLE_NAME, rbac.LOG_READER_ROLE_NAME)
        for kind in ("Role", "RoleBinding")
    ]


def test_the_api_may_only_read_gateway_logs_in_a_managed_namespace() -> None:
    reader, binding = rbac.provisioning(["tenant-a"])[2:]
    assert _expanded(reader["rules"]) == {
        ("", "namespaces", "get"),
        ("", "pods", "list"),
        ("", "pods/log", "get"),
    }
    assert binding["roleRef"]["name"] == reader["metadata"]["name"] == rbac.LOG_READER_ROLE_NAME
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "occ-api", "namespace": "occ-system"}
    ]


def printed(*options: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["kubernetes", "rbac", "--namespace", "a", *options])
    assert result.exit_code == 0, result.output
    return list(yaml.safe_load_all(result.output))


def test_occ_kubernetes_rbac_names_the_apis_account_or_leaves_it_out() -> None:
    named = printed("--api-service-account", "ops/occ-web")
    assert named[-1]["subjects"] == [
        {"kind": "ServiceAccount", "name": "occ-web", "namespace": "ops"}
    ]
    assert [d["metadata"]["name"] for d in printed("--api-service-account", "")] == [
        rbac.ROLE_NAME,
        rbac.ROLE_NAME,
    ]


def test_with_secret_values_the_api_may_also_keep_secret_values() -> None:
    shown = printed("--secret-values", "--namespace", "b")
    names = [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in shown]
    assert names[-2:] == [
        ("Role", "occ-secret-values", "b"),
        ("RoleBinding", "occ-secret-values", "b"),
    ]
    assert shown[-2]["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]}
    ]
    assert shown[-1]["subjects"] == [
        {"kind": "ServiceAccount", "name": "occ-api", "namespace": "occ-system"}
    ]
    refused = CliRunner().invoke(
        cli,
        ["kubernetes", "rbac", "--namespace", "a", "--api-service-account", "", "--secret-values"],
    )
    assert refused.exit_code == 2 and "--secret-values" in refused.output


def test_occ_kubernetes_rbac_refuses_a_malformed_service_account() -> None:
    result = CliRunner().invoke(
        cli, ["kubernetes", "rbac", "--namespace", "a", "--service-account", "occ-worker"]
    )
    assert result.exit_code == 2
    assert "namespace/name" in result.output
    result = CliRunner().invoke(
        cli, ["kubernetes", "rbac", "--namespace", "a", "--api-service-account", "occ-api"]
    )
    assert result.exit_code == 2
    assert "--api-service-account" in result.output


def test_with_namespace_each_namespace_comes_first_at_the_restricted_level() -> None:
    result = CliRunner().invoke(
        cli, ["kubernetes", "rbac", "--namespace", "tenant-a", "--with-namespace"]
    )
    assert result.exit_code == 0, result.output
    first, *rest = yaml.safe_load_all(result.output)
    assert (first["kind"], first["metadata"]["name"]) == ("Namespace", "tenant-a")
    labels = first["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    assert [d["kind"] for d in rest] == ["Role", "RoleBinding", "Role", "RoleBinding"]


def test_the_role_lets_occ_read_the_gateway_pods_start_line() -> None:
    granted = _expanded(rbac.role("tenant-a")["rules"])
    assert ("", "pods/log", "get") in granted  # the gateway's startup warnings
    assert ("", "pods", "list") in granted  # which Pod of the revision is ready
    assert ("", "pods", "get") not in granted
    assert ("", "pods/log", "list") not in granted
