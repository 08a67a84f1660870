"""The ``kubernetes`` driver over real HTTP against the fake API server.

Idempotency (versions and call counts), drift repair, rediscovery by labels, adoption,
refusal of foreign objects, rollout verdicts, embedded redeploys, stop, retirement, Agent and
Namespace teardown.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, naming
from occ.foundation import codes
from tests.integration.drivers.kubernetes import helpers
from tests.integration.drivers.kubernetes.conftest import MakeDriver
from tests.support.kube_api import FakeKubeAPI

Specs = helpers.Specs

FIRST_DEPLOY_CALLS = 17
"""Measured: prepare 14 (read + write of 5 objects and of the 2 NetworkPolicies), activate 3
(read, apply, slices)."""
NO_OP_PASS_CALLS = 12
"""Measured: prepare 7 reads, activate 5 (Deployment read, EndpointSlice list, the ready
gateway Pod list and the start of its log for the startup warnings, the authentication egress
read to close it)."""


def test_ensure_namespace_twice_changes_nothing_the_second_time(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    assert name == naming.kubernetes_namespace("occ-", specs.namespace.id)
    labels = kube_api.existing("namespaces", None, name)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    policies = {p["metadata"]["name"] for p in kube_api.objects("networkpolicies", name)}
    assert policies == {naming.DEFAULT_DENY, naming.ALLOW_DNS}
    before = helpers.versions(kube_api, name)
    kube_api.clear_journal()
    assert isinstance(driver.ensure_namespace(operation, specs.namespace), base.Ready)
    assert helpers.writes(kube_api) == []
    assert helpers.versions(kube_api, name) == before


def test_quota_and_limits_come_from_settings(
    make_driver: MakeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    driver = make_driver(
        kubernetes_resource_quota={"pods": "10"},
        kubernetes_limit_range={"default": {"cpu": "250m"}},
    )
    name = helpers.ready_namespace(driver, operation, specs)
    quota = kube_api.get("resourcequotas", name, naming.RESOURCE_QUOTA)
    assert quota is not None and quota["spec"]["hard"] == {"pods": "10"}
    limits = kube_api.get("limitranges", name, naming.LIMIT_RANGE)
    assert limits is not None and limits["spec"]["limits"][0]["default"] == {"cpu": "250m"}


def test_first_deploy_and_a_no_op_pass_within_their_call_budgets(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    kube_api.clear_journal()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert isinstance(driver.activate_revision(operation, revision), base.Pending)
    first_deploy = len(kube_api.journal)
    assert first_deploy <= FIRST_DEPLOY_CALLS
    kube_api.mark_rollout(name, helpers.gateway_name(revision))
    activation = driver.activate_revision(operation, revision)
    assert isinstance(activation, base.Activation)
    assert activation.endpoint == (
        f"http://{naming.agent_object(revision.agent_id)}.{name}.svc.cluster.local:8080"
    )

    before = helpers.versions(kube_api, name)
    kube_api.clear_journal()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert driver.activate_revision(operation, revision) == activation
    assert helpers.writes(kube_api) == []
    assert len(kube_api.journal) <= NO_OP_PASS_CALLS
    assert helpers.versions(kube_api, name) == before


def test_objects_changed_behind_occs_back_are_repaired_on_the_next_pass(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, revision = helpers.deployed(driver, kube_api, operation, specs)
    agent_object = naming.agent_object(revision.agent_id)

    kube_api.remove("services", name, agent_object)
    kube_api.remove("configmaps", name, naming.configuration_map(revision.revision_id))

    def tamper(deployment: dict[str, Any]) -> None:
        deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"

    kube_api.edit("deployments", name, agent_object, tamper)
    kube_api.edit(
        "networkpolicies",
        name,
        naming.DEFAULT_DENY,
        lambda p: p["spec"].update(policyTypes=["Ingress"]),
    )

    assert isinstance(driver.ensure_namespace(operation, specs.namespace), base.Ready)
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    driver.activate_revision(operation, revision)
    assert kube_api.get("services", name, agent_object) is not None
    assert kube_api.get("configmaps", name, naming.configuration_map(revision.revision_id))
    deployment = kube_api.get("deployments", name, agent_object)
    assert deployment is not None
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        helpers.GATEWAY_IMAGE
    )
    policy = kube_api.get("networkpolicies", name, naming.DEFAULT_DENY)
    assert policy is not None and policy["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_a_new_driver_instance_finds_everything_by_labels(
    make_driver: MakeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    first = make_driver()
    name = helpers.ready_namespace(first, operation, specs)
    revision = specs.revision()
    activation = helpers.deploy(first, kube_api, operation, revision)
    before = helpers.versions(kube_api, name)

    fresh = make_driver()  # no memory of the namespace name or of any object
    assert fresh.kubernetes_namespace(specs.namespace.id) == name
    assert fresh.activate_revision(operation, revision) == activation
    assert helpers.versions(kube_api, name) == before
    fresh.stop_revision(operation, revision)
    deployment = kube_api.get("deployments", name, naming.agent_object(revision.agent_id))
    assert deployment is not None and deployment["spec"]["replicas"] == 0


def test_an_existing_namespace_is_adopted_and_never_deleted(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    kube_api.create_foreign(
        "namespaces",
        None,
        {"metadata": {"name": "tenant-a", "labels": {"team": "a"}}},
    )
    kube_api.create_foreign(
        "configmaps", "tenant-a", {"metadata": {"name": "theirs"}, "data": {"k": "v"}}
    )
    adopted = base.NamespaceSpec(id=specs.namespace.id, name="team", existing_namespace="tenant-a")
    specs.namespace = adopted
    assert isinstance(driver.ensure_namespace(operation, adopted), base.Ready)
    namespace = kube_api.get("namespaces", None, "tenant-a")
    assert namespace is not None
    labels = namespace["metadata"]["labels"]
    assert labels["team"] == "a" and labels[naming.NAMESPACE_ID] == adopted.id
    assert "pod-security.kubernetes.io/enforce" not in labels  # the tenant's choice stays
    assert namespace["metadata"]["annotations"][naming.ADOPTED] == "true"
    deny = kube_api.get("networkpolicies", "tenant-a", naming.DEFAULT_DENY)
    assert deny is not None and deny["spec"]["podSelector"] == {
        "matchLabels": {naming.MANAGED_BY: naming.MANAGER}
    }

    revision = specs.revision()
    helpers.deploy(driver, kube_api, operation, revision)
    assert kube_api.objects("deployments", "tenant-a")

    observation = driver.delete_namespace(operation, adopted)
    while isinstance(observation, base.Pending):
        observation = driver.delete_namespace(operation, adopted)
    assert isinstance(observation, base.Ready)
    namespace = kube_api.get("namespaces", None, "tenant-a")
    assert namespace is not None  # never deleted
    assert naming.NAMESPACE_ID not in namespace["metadata"]["labels"]
    assert namespace["metadata"]["labels"]["team"] == "a"
    left = [
        (plural, obj["metadata"]["name"])
        for plural in ("configmaps", "deployments", "services", "networkpolicies", "secrets")
        for obj in kube_api.objects(plural, "tenant-a")
    ]
    assert left == [("configmaps", "theirs")]


def test_a_namespace_adopted_by_another_namespace_is_refused(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    kube_api.create_foreign("namespaces", None, {"metadata": {"name": "shared"}})
    first = base.NamespaceSpec(id=specs.namespace.id, name="a", existing_namespace="shared")
    assert isinstance(driver.ensure_namespace(operation, first), base.Ready)
    other = base.NamespaceSpec(
        id="ns_00000000-0000-4000-8000-000000000001", name="b", existing_namespace="shared"
    )
    with pytest.raises(base.PermanentDriverError) as refused:
        driver.ensure_namespace(operation, other)
    assert refused.value.code == "KUBERNETES_OBJECT_NOT_OWNED"
    missing = base.NamespaceSpec(id=other.id, name="b", existing_namespace="nowhere")
    with pytest.raises(base.PermanentDriverError) as absent:
        driver.ensure_namespace(operation, missing)
    assert absent.value.code == "KUBERNETES_NAMESPACE_MISSING"


def test_a_foreign_object_with_occs_name_is_refused_not_adopted(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    squatted = kube_api.create_foreign(
        "serviceaccounts", name, {"metadata": {"name": naming.agent_object(revision.agent_id)}}
    )
    with pytest.raises(base.PermanentDriverError) as refused:
        driver.prepare_revision(operation, revision)
    assert refused.value.code == "KUBERNETES_OBJECT_NOT_OWNED"
    assert codes.lookup(refused.value.code) is not None
    after = kube_api.get("serviceaccounts", name, naming.agent_object(revision.agent_id))
    assert after is not None
    assert after["metadata"]["resourceVersion"] == squatted["metadata"]["resourceVersion"]

    taken = naming.kubernetes_namespace("occ-", "ns_00000000-0000-4000-8000-00000000000f")
    kube_api.create_foreign("namespaces", None, {"metadata": {"name": taken}})
    with pytest.raises(base.PermanentDriverError):
        driver.ensure_namespace(
            operation, base.NamespaceSpec(id="ns_00000000-0000-4000-8000-00000000000f", name="x")
        )


def test_a_rollout_that_never_becomes_ready_stays_pending(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert isinstance(driver.activate_revision(operation, revision), base.Pending)
    kube_api.mark_rollout(name, helpers.gateway_name(revision), ready=False)
    for _ in range(3):
        assert isinstance(driver.activate_revision(operation, revision), base.Pending)


def test_a_progress_deadline_fails_the_activation_with_its_own_code(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision()
    driver.prepare_revision(operation, revision)
    driver.activate_revision(operation, revision)
    kube_api.mark_rollout(name, helpers.gateway_name(revision), ready="deadline")
    failed = driver.activate_revision(operation, revision)
    assert isinstance(failed, base.Failed)
    assert failed.permanent and failed.code == "ROLLOUT_PROGRESS_DEADLINE_EXCEEDED"
    assert codes.lookup(failed.code) is not None


def test_an_embedded_redeploy_swaps_the_template_only_at_activation(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, first = helpers.deployed(driver, kube_api, operation, specs)
    second = specs.revision()
    gateway = naming.agent_object(first.agent_id)
    running = kube_api.get("deployments", name, gateway)
    assert running is not None

    assert isinstance(driver.prepare_revision(operation, second), base.Ready)
    unchanged = kube_api.get("deployments", name, gateway)
    assert unchanged is not None
    assert unchanged["metadata"]["resourceVersion"] == running["metadata"]["resourceVersion"]

    helpers.deploy(driver, kube_api, operation, second)
    driver.retire_revision(operation, first)
    deployment = kube_api.get("deployments", name, gateway)
    assert deployment is not None
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations[naming.REVISION_ANNOTATION] == second.revision_id
    assert kube_api.get("configmaps", name, naming.configuration_map(first.revision_id)) is None
    assert kube_api.get("secrets", name, naming.credential_secret(first.revision_id)) is None
    assert kube_api.get("configmaps", name, naming.configuration_map(second.revision_id))
    driver.retire_revision(operation, first)  # again: nothing left, nothing raised


def test_stop_scales_to_zero_and_keeps_snapshot_credential_and_volume(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, revision = helpers.deployed(driver, kube_api, operation, specs)
    driver.stop_revision(operation, revision)
    deployment = kube_api.get("deployments", name, naming.agent_object(revision.agent_id))
    assert deployment is not None and deployment["spec"]["replicas"] == 0
    assert kube_api.get("configmaps", name, naming.configuration_map(revision.revision_id))
    assert kube_api.get("secrets", name, naming.credential_secret(revision.revision_id))
    assert kube_api.get("persistentvolumeclaims", name, naming.state_claim(revision.agent_id))
    kube_api.clear_journal()
    driver.stop_revision(operation, revision)
    assert helpers.writes(kube_api) == []


def test_dedicated_revisions_start_only_after_predecessors_stop(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    first = specs.revision(mode="dedicated")
    capabilities = driver.revision_capabilities(first)
    assert capabilities.requires_stopped_predecessors
    assert capabilities.activation_order == base.ActivationOrder.AFTER_COMMIT
    assert not driver.revision_capabilities(specs.revision()).requires_stopped_predecessors

    assert isinstance(driver.prepare_revision(operation, first), base.Pending)
    service = kube_api.get("services", name, naming.agent_object(first.agent_id))
    assert service is not None and service["spec"]["selector"][naming.REVISION_ID] == ""
    helpers.deploy(driver, kube_api, operation, first)
    service = kube_api.get("services", name, naming.agent_object(first.agent_id))
    assert service is not None
    assert service["spec"]["selector"][naming.REVISION_ID] == first.revision_id

    second = specs.revision(mode="dedicated")
    pending = driver.prepare_revision(operation, second)
    assert isinstance(pending, base.Pending) and "earlier" in pending.reason
    assert (
        kube_api.get("deployments", name, naming.dedicated_deployment(second.revision_id)) is None
    )
    driver.stop_revision(operation, first)
    kube_api.mark_rollout(name, naming.dedicated_deployment(first.revision_id))
    helpers.deploy(driver, kube_api, operation, second)
    service = kube_api.get("services", name, naming.agent_object(first.agent_id))
    assert service is not None
    assert service["spec"]["selector"][naming.REVISION_ID] == second.revision_id
    driver.retire_revision(operation, first)
    assert kube_api.get("deployments", name, naming.dedicated_deployment(first.revision_id)) is None
    assert kube_api.get("configmaps", name, naming.configuration_map(first.revision_id)) is None
    assert kube_api.get("deployments", name, naming.dedicated_deployment(second.revision_id))


def test_the_credential_reaches_the_gateway_only_through_its_secret(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, revision = helpers.deployed(driver, kube_api, operation, specs)
    secret_name = naming.credential_secret(revision.revision_id)
    secret = kube_api.get("secrets", name, secret_name)
    assert secret is not None and secret["type"] == "Opaque"
    assert base64.b64decode(secret["data"]["credential"]).decode() == helpers.CREDENTIAL
    assert revision.credential is not None
    assert secret["metadata"]["annotations"][naming.FINGERPRINT_ANNOTATION] == (
        revision.credential.fingerprint
    )
    deployment = kube_api.get("deployments", name, naming.agent_object(revision.agent_id))
    assert deployment is not None
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["credential"]["secret"]["secretName"] == secret_name
    assert "env" not in pod["containers"][0]

    encoded = base64.b64encode(helpers.CREDENTIAL.encode()).decode()
    stored: list[object] = []
    for plural in (*helpers.AGENT_PLURALS, "pods", "endpointslices", "networkpolicies"):
        for obj in kube_api.objects(plural, name):
            if plural == "secrets" and obj["metadata"]["name"] == secret_name:
                obj = {k: v for k, v in obj.items() if k != "data"}  # noqa: PLW2901
            stored.append(obj)
    stored.append(kube_api.get("namespaces", None, name))
    text = json.dumps(stored)
    assert helpers.CREDENTIAL not in text and encoded not in text
    bodies = json.dumps([r.body for r in kube_api.journal if "/secrets" not in r.path], default=str)
    assert helpers.CREDENTIAL not in bodies and encoded not in bodies


def test_deleting_the_agent_removes_every_object_labelled_with_it(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, first = helpers.deployed(driver, kube_api, operation, specs)
    second = specs.revision()
    helpers.deploy(driver, kube_api, operation, second)
    other = specs.revision(agent_id="agt_00000000-0000-4000-8000-000000000003")
    helpers.deploy(driver, kube_api, operation, other)
    for revision in (first, second):
        driver.retire_revision(operation, revision)
    driver.delete_agent_credentials(operation, specs.namespace.id, specs.agent_id)
    selector = f"{naming.AGENT_ID}={specs.agent_id}"
    for plural in (*helpers.AGENT_PLURALS, "pods"):
        assert kube_api.objects(plural, name, label_selector=selector) == [], plural
    assert kube_api.objects("deployments", name, f"{naming.AGENT_ID}={other.agent_id}")
    driver.delete_agent_credentials(operation, specs.namespace.id, specs.agent_id)


def test_namespace_deletion_waits_while_the_namespace_terminates(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name = helpers.ready_namespace(driver, operation, specs)
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Pending)
    terminating = kube_api.get("namespaces", None, name)
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Pending)
    kube_api.finish_namespace_deletion(name)
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Ready)
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Ready)


def test_preflight_refuses_a_denied_verb_and_warns_on_old_servers(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    driver.preflight()
    kube_api.server_version = ("1", "29")
    with caplog.at_level(logging.WARNING, logger="occ"):
        driver.preflight()
    assert any("kubernetes-version-old" in r.getMessage() for r in caplog.records)
    kube_api.deny("delete", "deployments")
    with pytest.raises(base.PermanentDriverError) as refused:
        driver.preflight()
    assert refused.value.code == "KUBERNETES_PERMISSION_MISSING"
    assert "delete deployments" in refused.value.reason


def test_settings_without_a_gateway_image_are_refused(make_driver: MakeDriver) -> None:
    with pytest.raises(base.PermanentDriverError) as refused:
        make_driver(kubernetes_gateway_image=None)
    assert refused.value.code == "KUBERNETES_SETTINGS_INVALID"
    with pytest.raises(base.PermanentDriverError):
        make_driver(kubernetes_kubeconfig="/nonexistent/kubeconfig")


def test_the_gateway_gets_its_agents_projected_token_with_the_set_audience(
    make_driver: MakeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    driver = make_driver(
        kubernetes_token_audience="https://tools.example/agents", kubernetes_token_lifetime_s=1200
    )
    try:
        name, revision = helpers.deployed(driver, kube_api, operation, specs)
    finally:
        driver.close()
    deployment = kube_api.get("deployments", name, naming.agent_object(revision.agent_id))
    assert deployment is not None
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    account = kube_api.get("serviceaccounts", name, pod["serviceAccountName"])
    assert account is not None and account["automountServiceAccountToken"] is False
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["identity"]["projected"]["sources"][0]["serviceAccountToken"] == {
        "audience": "https://tools.example/agents",
        "expirationSeconds": 1200,
        "path": "token",
    }
    (gateway,) = pod["containers"]
    assert {"name": "identity", "mountPath": "/var/run/occ/identity", "readOnly": True} in (
        gateway["volumeMounts"]
    )
