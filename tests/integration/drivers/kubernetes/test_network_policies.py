"""An Agent's own NetworkPolicies against the fake API server: staged before the workload
starts, removed with the revision and the Agent, and an authentication egress that a
superseded revision's pass never takes back, not even racing its successor."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, agent_policies, failures
from tests.integration.drivers.kubernetes import helpers
from tests.integration.drivers.kubernetes.conftest import MakeDriver
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

Specs = helpers.Specs
CIDRS = "10.20.0.0/16,192.0.2.10/32"
CALLERS = [{"namespace": {"kubernetes.io/metadata.name": "occ-system"}, "pods": {"app": "api"}}]


@pytest.fixture
def networked(make_driver: MakeDriver) -> Any:
    made = make_driver(kubernetes_allowed_callers=CALLERS, kubernetes_authentication_egress=CIDRS)
    yield made
    made.close()


def _authentication(kube_api: FakeKubeAPI, namespace: str, agent_id: str) -> dict[str, Any]:
    policy = kube_api.get(
        "networkpolicies", namespace, agent_policies.authentication_name(agent_id)
    )
    assert policy is not None
    return policy


def _holder(kube_api: FakeKubeAPI, namespace: str, agent_id: str) -> tuple[str, str, bool]:
    """(revision id selected, phase annotation, whether egress is allowed)."""
    policy = _authentication(kube_api, namespace, agent_id)
    annotations = policy["metadata"]["annotations"]
    return (
        policy["spec"]["podSelector"]["matchLabels"]["occ.dev/revision-id"],
        annotations[agent_policies.PHASE_ANNOTATION],
        bool(policy["spec"].get("egress")),
    )


def test_a_dedicated_revisions_policies_are_staged_before_its_workload_starts(
    networked: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> None:
    name = helpers.ready_namespace(networked, operation, specs)
    revision = specs.revision(mode="dedicated")
    kube_api.clear_journal()
    networked.prepare_revision(operation, revision)
    writes = [(r.method, r.path.rsplit("/", 2)[-2:]) for r in kube_api.journal if r.method != "GET"]
    policy_writes = [i for i, (_, path) in enumerate(writes) if "networkpolicies" in path]
    gateway = [i for i, (_, path) in enumerate(writes) if "deployments" in path]
    assert len(policy_writes) == 2 and gateway
    assert max(policy_writes) < min(gateway)

    runtime = kube_api.get(
        "networkpolicies", name, agent_policies.runtime_name(revision.revision_id)
    )
    assert runtime is not None
    assert runtime["spec"]["ingress"][0]["from"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "occ-system"}},
            "podSelector": {"matchLabels": {"app": "api"}},
        }
    ]
    assert _holder(kube_api, name, specs.agent_id) == (revision.revision_id, "open", True)
    kube_api.mark_rollout(name, helpers.gateway_name(revision))
    helpers.deploy(networked, kube_api, operation, revision)
    # active: the temporary egress is shut, the runtime ingress stays
    assert _holder(kube_api, name, specs.agent_id) == (revision.revision_id, "closed", False)


def test_policies_go_with_their_revision_and_their_agent(
    networked: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> None:
    name, first = helpers.deployed(networked, kube_api, operation, specs)
    second = specs.revision()
    helpers.deploy(networked, kube_api, operation, second)
    networked.retire_revision(operation, first)
    runtimes = {
        policy["metadata"]["name"]
        for policy in kube_api.objects("networkpolicies", name)
        if policy["metadata"]["name"].endswith("-runtime")
    }
    assert runtimes == {agent_policies.runtime_name(second.revision_id)}
    networked.delete_agent_credentials(operation, specs.namespace.id, specs.agent_id)
    assert sorted(p["metadata"]["name"] for p in kube_api.objects("networkpolicies", name)) == [
        "occ-allow-dns",
        "occ-default-deny",
    ]


def test_a_superseded_revision_never_takes_the_authentication_egress_back(
    networked: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> None:
    name, first = helpers.deployed(networked, kube_api, operation, specs)
    assert _holder(kube_api, name, specs.agent_id) == (first.revision_id, "closed", False)
    second = specs.revision()
    assert isinstance(networked.prepare_revision(operation, second), base.Ready)
    taken = (second.revision_id, "open", True)
    assert _holder(kube_api, name, specs.agent_id) == taken

    # every pass a superseded revision's stale work could still run
    networked.prepare_revision(operation, first)
    networked.activate_revision(operation, first)
    networked.stop_revision(operation, first)
    networked.retire_revision(operation, first)
    assert _holder(kube_api, name, specs.agent_id) == taken

    helpers.deploy(networked, kube_api, operation, second)
    closed = (second.revision_id, "closed", False)
    assert _holder(kube_api, name, specs.agent_id) == closed
    networked.prepare_revision(operation, second)  # a repeated pass: closed stays closed
    networked.prepare_revision(operation, first)
    assert _holder(kube_api, name, specs.agent_id) == closed


def test_a_superseded_pass_racing_its_successor_gets_a_conflict_not_the_policy(
    make_driver: MakeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    """The stale pass read the egress before the successor took it over; its write carries
    that version, so the API server refuses it instead of moving the egress back."""
    settings = {"kubernetes_allowed_callers": CALLERS, "kubernetes_authentication_egress": CIDRS}
    stale, current = make_driver(**settings), make_driver(**settings)
    try:
        name = helpers.ready_namespace(stale, operation, specs)
        first = specs.revision()
        assert isinstance(stale.prepare_revision(operation, first), base.Ready)
        assert isinstance(stale.activate_revision(operation, first), base.Pending)
        kube_api.mark_rollout(name, helpers.gateway_name(first))
        policy_path = (
            f"/apis/networking.k8s.io/v1/namespaces/{name}/networkpolicies/"
            f"{agent_policies.authentication_name(specs.agent_id)}"
        )
        kube_api.inject("PATCH", policy_path, delay_s=1.0)  # the stale close, held in flight
        outcome: dict[str, BaseException | object] = {}

        def late_activation() -> None:
            try:
                outcome["result"] = stale.activate_revision(operation, first)
            except BaseException as exc:  # what the stale pass ended with
                outcome["error"] = exc

        thread = threading.Thread(target=late_activation)
        thread.start()
        wait_for(
            lambda: any(r.method == "PATCH" and r.path == policy_path for r in kube_api.journal),
            timeout=5,
            message="the stale pass to send its close",
        )
        second = specs.revision()
        assert isinstance(current.prepare_revision(operation, second), base.Ready)
        thread.join(timeout=10)
        assert not thread.is_alive()
        error = outcome.get("error")
        assert isinstance(error, base.TransientDriverError) and error.code == failures.CONFLICT
        assert _holder(kube_api, name, specs.agent_id) == (second.revision_id, "open", True)
    finally:
        stale.close()
        current.close()


def test_without_callers_the_runtime_policy_admits_nobody(
    driver: KubernetesComputeDriver, kube_api: FakeKubeAPI, operation: base.Operation, specs: Specs
) -> None:
    name, revision = helpers.deployed(driver, kube_api, operation, specs)
    runtime = kube_api.get(
        "networkpolicies", name, agent_policies.runtime_name(revision.revision_id)
    )
    assert runtime is not None and runtime["spec"].get("ingress", []) == []
    assert _authentication(kube_api, name, specs.agent_id)["spec"].get("egress", []) == []
