"""The fake Kubernetes API server, driven over HTTP by the real ``kubernetes`` v37 client.

Each test states one apiserver behaviour the Kubernetes Compute Driver relies on, so a
drift between the fake and the real semantics shows up here first.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client import exceptions

from tests.integration.support.conftest import Clients, api_client_for, document, present, wire
from tests.support import kube_api

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
MANAGER = "occ-test"


def _reason(error: exceptions.ApiException) -> str:
    return str(json.loads(error.body or "{}").get("reason"))


def _deployment(name: str = "web", image: str = "img:1", replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "gateway",
                            "image": image,
                            "ports": [{"name": "http", "containerPort": 8080}],
                        }
                    ]
                },
            },
        },
    }


def _service(name: str = "web", selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": selector if selector is not None else {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }


def _apply_deployment(clients: Clients, ns: str, body: dict[str, Any]) -> client.V1Deployment:
    return clients.apps.patch_namespaced_deployment(
        body["metadata"]["name"],
        ns,
        body,
        field_manager=MANAGER,
        force=True,
        _content_type=APPLY,
    )


# -- create, read, conflicts -------------------------------------------------------------


def test_create_fills_system_metadata_and_a_second_create_is_already_exists(
    clients: Clients, ns: str
) -> None:
    created = clients.core.create_namespaced_config_map(
        ns, wire({"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    )
    assert (
        present(created.metadata).uid and present(created.metadata).creation_timestamp is not None
    )
    assert (
        present(created.metadata).namespace == ns
        and int(present(present(created.metadata).resource_version)) > 0
    )
    with pytest.raises(exceptions.ConflictException) as raised:
        clients.core.create_namespaced_config_map(ns, wire({"metadata": {"name": "cfg"}}))
    assert _reason(raised.value) == "AlreadyExists"


def test_namespace_gets_its_name_label_and_is_active(clients: Clients, fake: Any) -> None:
    created = clients.core.create_namespace(wire({"metadata": {"name": "team-b"}}))
    assert present(created.metadata).labels == {"kubernetes.io/metadata.name": "team-b"}
    assert present(created.status).phase == "Active"


def test_missing_objects_are_not_found(clients: Clients, ns: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: clients.core.read_namespaced_config_map("nope", ns),
        lambda: clients.core.patch_namespaced_config_map(
            "nope", ns, {"data": {"a": "1"}}, _content_type=MERGE
        ),
        lambda: clients.core.delete_namespaced_config_map("nope", ns),
        lambda: clients.core.create_namespaced_config_map(
            "absent", wire({"metadata": {"name": "c"}})
        ),
    ]
    for call in calls:
        with pytest.raises(exceptions.NotFoundException) as raised:
            call()
        assert _reason(raised.value) == "NotFound"
    body = json.loads(raised.value.body or "{}")
    assert body["kind"] == "Status" and body["details"] == {"name": "absent", "kind": "namespaces"}


def test_body_namespace_must_match_the_url(clients: Clients, ns: str) -> None:
    with pytest.raises(exceptions.BadRequestException):
        clients.core.create_namespaced_config_map(
            ns, wire({"metadata": {"name": "c", "namespace": "elsewhere"}})
        )


def test_invalid_names_and_labels_are_invalid(clients: Clients, ns: str) -> None:
    with pytest.raises(exceptions.UnprocessableEntityException) as raised:
        clients.core.create_namespace(wire({"metadata": {"name": "Not_A_Label"}}))
    assert _reason(raised.value) == "Invalid"
    with pytest.raises(exceptions.UnprocessableEntityException):
        clients.core.create_namespaced_config_map(
            ns, wire({"metadata": {"name": "c", "labels": {"bad key!": "v"}}})
        )
    with pytest.raises(exceptions.UnprocessableEntityException):
        clients.core.create_namespaced_config_map(
            ns, wire({"metadata": {"name": "c", "labels": {"k": "-bad-value"}}})
        )


# -- server-side apply and no-op detection -----------------------------------------------


def test_apply_creates_then_an_identical_apply_changes_nothing(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.clear_journal()
    first = _apply_deployment(clients, ns, _deployment())
    again = _apply_deployment(clients, ns, _deployment())
    assert (present(first.metadata).resource_version, present(first.metadata).generation) == (
        present(again.metadata).resource_version,
        present(again.metadata).generation,
    )
    assert [request.status for request in fake.journal] == [201, 200]
    assert fake.journal[0].query == {"fieldManager": [MANAGER], "force": ["true"]}
    assert fake.journal[0].content_type == APPLY
    stored = fake.get("deployments", ns, "web")
    assert stored is not None and stored["metadata"]["managedFields"][-1]["manager"] == MANAGER


def test_apply_removes_fields_missing_from_the_body_and_bumps_generation_on_spec_only(
    clients: Clients, ns: str
) -> None:
    body = _deployment()
    body["metadata"]["annotations"] = {"occ.dev/note": "x"}
    first = _apply_deployment(clients, ns, body)
    del body["metadata"]["annotations"]
    relabelled = _apply_deployment(clients, ns, body)
    assert present(relabelled.metadata).annotations is None
    assert present(relabelled.metadata).generation == present(first.metadata).generation
    assert present(relabelled.metadata).resource_version != present(first.metadata).resource_version
    changed = _apply_deployment(clients, ns, _deployment(image="img:2"))
    assert present(changed.metadata).generation == present(present(first.metadata).generation) + 1


def test_apply_requires_a_field_manager_and_force_only_with_apply(
    clients: Clients, ns: str
) -> None:
    with pytest.raises(exceptions.UnprocessableEntityException):
        clients.apps.patch_namespaced_deployment("web", ns, _deployment(), _content_type=APPLY)
    _apply_deployment(clients, ns, _deployment())
    with pytest.raises(exceptions.UnprocessableEntityException):
        clients.apps.patch_namespaced_deployment(
            "web", ns, {"spec": {"replicas": 2}}, force=True, _content_type=MERGE
        )


def test_service_keeps_its_allocated_cluster_ip_which_cannot_change(
    clients: Clients, ns: str
) -> None:
    created = clients.core.patch_namespaced_service(
        "web", ns, _service(), field_manager=MANAGER, force=True, _content_type=APPLY
    )
    assert present(created.spec).cluster_ip and present(created.spec).cluster_ips == [
        present(created.spec).cluster_ip
    ]
    again = clients.core.patch_namespaced_service(
        "web", ns, _service(), field_manager=MANAGER, force=True, _content_type=APPLY
    )
    assert present(again.spec).cluster_ip == present(created.spec).cluster_ip
    assert present(again.metadata).resource_version == present(created.metadata).resource_version
    moved = _service()
    moved["spec"]["clusterIP"] = "10.96.99.99"
    with pytest.raises(exceptions.UnprocessableEntityException):
        clients.core.patch_namespaced_service(
            "web", ns, moved, field_manager=MANAGER, force=True, _content_type=APPLY
        )


# -- other patches, concurrency, immutability --------------------------------------------


def test_merge_patch_null_deletes_and_json_patch_edits(clients: Clients, ns: str) -> None:
    clients.core.create_namespaced_config_map(
        ns, wire({"metadata": {"name": "cfg", "labels": {"a": "1", "b": "2"}}, "data": {"k": "v"}})
    )
    merged = clients.core.patch_namespaced_config_map(
        "cfg",
        ns,
        {"metadata": {"labels": {"a": None}}, "data": {"k2": "v2"}},
        _content_type=MERGE,
    )
    assert present(merged.metadata).labels == {"b": "2"} and merged.data == {"k": "v", "k2": "v2"}
    patched = clients.core.patch_namespaced_config_map(
        "cfg",
        ns,
        [{"op": "replace", "path": "/data/k", "value": "w"}, {"op": "remove", "path": "/data/k2"}],
    )
    assert patched.data == {"k": "w"}


def test_stale_resource_version_is_a_conflict(clients: Clients, ns: str) -> None:
    created = clients.core.create_namespaced_config_map(
        ns, wire({"metadata": {"name": "cfg"}, "data": {"k": "v"}})
    )
    created_version = present(created.metadata).resource_version

    def replace_at_created_version(data: dict[str, str]) -> client.V1ConfigMap:
        """Replace ``cfg`` with ``data``, on the condition it is still at its first version."""
        metadata = {"name": "cfg", "resourceVersion": created_version}
        return clients.core.replace_namespaced_config_map(
            "cfg", ns, wire({"metadata": metadata, "data": data})
        )

    current = replace_at_created_version({"k": "w"})
    assert present(current.metadata).resource_version != created_version
    stale = {"metadata": {"resourceVersion": created_version}, "data": {"k": "x"}}
    calls: tuple[Callable[[], object], ...] = (
        lambda: replace_at_created_version({"k": "x"}),
        lambda: clients.core.patch_namespaced_config_map("cfg", ns, stale, _content_type=MERGE),
    )
    for call in calls:
        with pytest.raises(exceptions.ConflictException) as raised:
            call()
        assert _reason(raised.value) == "Conflict"
    assert clients.core.read_namespaced_config_map("cfg", ns).data == {"k": "w"}


def test_delete_precondition_on_a_wrong_uid_is_a_conflict(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    created = clients.core.create_namespaced_config_map(ns, wire({"metadata": {"name": "cfg"}}))
    with pytest.raises(exceptions.ConflictException) as raised:
        clients.core.delete_namespaced_config_map(
            "cfg", ns, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="x"))
        )
    assert _reason(raised.value) == "Conflict"
    assert fake.get("configmaps", ns, "cfg") is not None
    deleted = clients.core.delete_namespaced_config_map(
        "cfg",
        ns,
        propagation_policy="Background",
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid=present(created.metadata).uid)
        ),
    )
    assert document(deleted)["metadata"]["uid"] == present(created.metadata).uid
    assert fake.get("configmaps", ns, "cfg") is None


def test_immutable_config_map_refuses_data_changes_but_takes_labels(
    clients: Clients, ns: str
) -> None:
    clients.core.create_namespaced_config_map(
        ns, wire({"metadata": {"name": "snap"}, "data": {"k": "v"}, "immutable": True})
    )
    with pytest.raises(exceptions.UnprocessableEntityException) as raised:
        clients.core.patch_namespaced_config_map(
            "snap", ns, {"data": {"k": "changed"}}, _content_type=MERGE
        )
    assert _reason(raised.value) == "Invalid"
    relabelled = clients.core.patch_namespaced_config_map(
        "snap", ns, {"metadata": {"labels": {"x": "y"}}}, _content_type=MERGE
    )
    assert present(relabelled.metadata).labels == {"x": "y"} and relabelled.data == {"k": "v"}


def test_deployment_selector_is_immutable_and_must_match_the_template(
    clients: Clients, ns: str
) -> None:
    _apply_deployment(clients, ns, _deployment())
    moved = _deployment()
    moved["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    moved["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    with pytest.raises(exceptions.UnprocessableEntityException):
        _apply_deployment(clients, ns, moved)
    mismatched = _deployment("other")
    mismatched["spec"]["template"]["metadata"]["labels"] = {"app": "else"}
    with pytest.raises(exceptions.UnprocessableEntityException):
        _apply_deployment(clients, ns, mismatched)


def test_claim_spec_is_immutable_except_storage_growth(clients: Clients, ns: str) -> None:
    def claim(size: str, mode: str = "ReadWriteOnce") -> dict[str, Any]:
        return {
            "metadata": {"name": "data"},
            "spec": {"accessModes": [mode], "resources": {"requests": {"storage": size}}},
        }

    clients.core.create_namespaced_persistent_volume_claim(ns, wire(claim("1Gi")))
    grown = clients.core.patch_namespaced_persistent_volume_claim(
        "data", ns, claim("2Gi"), _content_type=MERGE
    )
    assert present(present(grown.spec).resources).requests == {"storage": "2Gi"}
    for change in (claim("1Gi"), claim("2Gi", "ReadWriteMany")):
        with pytest.raises(exceptions.UnprocessableEntityException):
            clients.core.patch_namespaced_persistent_volume_claim(
                "data", ns, change, _content_type=MERGE
            )


def test_secret_string_data_is_stored_encoded(clients: Clients, ns: str) -> None:
    created = clients.core.create_namespaced_secret(
        ns, wire({"metadata": {"name": "token"}, "stringData": {"value": "s3cr3t"}})
    )
    assert created.data == {"value": "czNjcjN0"} and created.type == "Opaque"


def test_schema_validation_rejects_and_records_an_invalid_manifest(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    bad = _deployment()
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 3
    with pytest.raises(exceptions.UnprocessableEntityException) as raised:
        _apply_deployment(clients, ns, bad)
    assert _reason(raised.value) == "Invalid"
    assert [(f.plural, f.namespace, f.name) for f in fake.validation_errors] == [
        ("deployments", ns, "web")
    ]
    assert fake.get("deployments", ns, "web") is None
    _apply_deployment(clients, ns, _deployment())
    assert len(fake.validation_errors) == 1


def test_unknown_patch_type_is_unsupported_media_type(fake: kube_api.FakeKubeAPI, ns: str) -> None:
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(fake.url).netloc, timeout=5)
    connection.request(
        "PATCH",
        f"/api/v1/namespaces/{ns}",
        body=b"{}",
        headers={"Content-Type": "application/xml", "Authorization": f"Bearer {fake.token}"},
    )
    response = connection.getresponse()
    assert response.status == 415
    assert json.loads(response.read())["reason"] == "UnsupportedMediaType"
    connection.close()


# -- deletion and namespace termination --------------------------------------------------


def test_terminating_namespace_refuses_new_content_until_it_is_gone(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    clients.core.create_namespaced_config_map(ns, wire({"metadata": {"name": "cfg"}}))
    clients.core.delete_namespace(ns)
    assert present(clients.core.read_namespace(ns).status).phase == "Terminating"
    with pytest.raises(exceptions.ForbiddenException) as raised:
        clients.core.create_namespaced_config_map(ns, wire({"metadata": {"name": "new"}}))
    assert "because it is being terminated" in json.loads(raised.value.body or "{}")["message"]
    with pytest.raises(exceptions.ConflictException) as again:
        clients.core.create_namespace(wire({"metadata": {"name": ns}}))
    assert _reason(again.value) == "AlreadyExists"
    fake.finish_namespace_deletion(ns)
    with pytest.raises(exceptions.NotFoundException):
        clients.core.read_namespace(ns)
    assert fake.objects("configmaps", ns) == []


def test_namespace_deletion_can_finish_on_the_next_read(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.simulation.auto_finish_namespace_deletion = True
    deleted = clients.core.delete_namespace(ns)
    assert document(deleted)["status"]["phase"] == "Terminating"
    with pytest.raises(exceptions.NotFoundException):
        clients.core.read_namespace(ns)


def test_finalizers_hold_deletion_until_removed(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    clients.core.create_namespaced_config_map(
        ns, wire({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    )
    answer = clients.core.delete_namespaced_config_map("held", ns)
    assert document(answer)["metadata"]["deletionTimestamp"]
    assert present(clients.core.read_namespaced_config_map("held", ns).metadata).deletion_timestamp
    fake.edit("configmaps", ns, "held", lambda obj: obj["metadata"].pop("finalizers"))
    assert fake.get("configmaps", ns, "held") is None


def test_behind_the_back_changes_move_versions(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    first = _apply_deployment(clients, ns, _deployment())
    fake.edit("deployments", ns, "web", lambda obj: obj["spec"].update(replicas=3))
    edited = clients.apps.read_namespaced_deployment("web", ns)
    assert (
        edited.spec.replicas == 3
        and present(edited.metadata).generation == present(present(first.metadata).generation) + 1
    )
    fake.remove("deployments", ns, "web")
    with pytest.raises(exceptions.NotFoundException):
        clients.apps.read_namespaced_deployment("web", ns)
    squatter = fake.create_foreign("serviceaccounts", ns, {"metadata": {"name": "agent"}})
    assert (
        present(clients.core.read_namespaced_service_account("agent", ns).metadata).uid
        == (squatter["metadata"]["uid"])
    )


# -- lists and selectors -----------------------------------------------------------------


def test_label_and_field_selectors(clients: Clients, ns: str) -> None:
    for name, labels in (
        ("a", {"tier": "web", "env": "prod"}),
        ("b", {"tier": "db", "env": "prod"}),
        ("c", {"tier": "cache"}),
    ):
        clients.core.create_namespaced_config_map(
            ns, wire({"metadata": {"name": name, "labels": labels}})
        )

    def names(
        label_selector: str | None = None, field_selector: str | None = None
    ) -> list[str | None]:
        listed = clients.core.list_namespaced_config_map(
            ns, label_selector=label_selector, field_selector=field_selector
        )
        return [present(item.metadata).name for item in listed.items]

    assert names(label_selector="tier in (web,db)") == ["a", "b"]
    assert names(label_selector="tier notin (web,db)") == ["c"]
    assert names(label_selector="!env") == ["c"]
    assert names(label_selector="env") == ["a", "b"]
    assert names(label_selector="env==prod,tier!=web") == ["b"]
    assert names(label_selector="env=prod,tier=cache") == []
    assert names(field_selector="metadata.name=b") == ["b"]
    listed = clients.core.list_namespaced_config_map(ns)
    assert (
        listed.kind == "ConfigMapList"
        and int(present(present(listed.metadata).resource_version)) > 0
    )
    with pytest.raises(exceptions.BadRequestException):
        names(label_selector="tier in web")


# -- simulated controllers ---------------------------------------------------------------


def _ready_addresses(clients: Clients, ns: str, service: str) -> list[tuple[str, bool]]:
    slices = clients.discovery.list_namespaced_endpoint_slice(
        ns, label_selector=f"kubernetes.io/service-name={service}"
    )
    return [
        (address, bool(present(endpoint.conditions).ready))
        for item in slices.items
        for endpoint in item.endpoints or []
        for address in endpoint.addresses
    ]


def test_mark_rollout_sets_status_pods_and_endpoint_slices(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    _apply_deployment(clients, ns, _deployment(replicas=2))
    clients.core.patch_namespaced_service(
        "web", ns, _service(), field_manager=MANAGER, force=True, _content_type=APPLY
    )
    clients.core.patch_namespaced_service(
        "other", ns, _service("other"), field_manager=MANAGER, force=True, _content_type=APPLY
    )
    fake.mark_rollout(ns, "web", ready=False)
    status = clients.apps.read_namespaced_deployment("web", ns).status
    assert present(status).ready_replicas is None and present(status).updated_replicas == 2
    assert [ready for _, ready in _ready_addresses(clients, ns, "web")] == [False, False]

    fake.mark_rollout(ns, "web", ready=True)
    deployment = clients.apps.read_namespaced_deployment("web", ns)
    assert present(deployment.status).observed_generation == present(deployment.metadata).generation
    assert present(deployment.status).available_replicas == 2
    progressing = next(
        c for c in present(present(deployment.status).conditions) if c.type == "Progressing"
    )
    assert progressing.reason == "NewReplicaSetAvailable"
    pods = clients.core.list_namespaced_pod(ns, label_selector="app=web").items
    assert len(pods) == 2 and all(present(pod.status).phase == "Running" for pod in pods)
    assert sorted(_ready_addresses(clients, ns, "web")) == sorted(
        (present(pod.status).pod_ip, True) for pod in pods
    )
    assert _ready_addresses(clients, ns, "other") == []
    ports = present(clients.discovery.list_namespaced_endpoint_slice(ns).items[-1].ports)
    assert [port.port for port in ports] == [8080]  # the named targetPort, resolved

    fake.mark_rollout(ns, "web", ready="deadline")
    conditions = present(
        present(clients.apps.read_namespaced_deployment("web", ns).status).conditions
    )
    assert [(c.status, c.reason) for c in conditions if c.type == "Progressing"] == [
        ("False", "ProgressDeadlineExceeded")
    ]


def test_endpoint_slices_carry_their_services_labels(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    service = _service()
    service["metadata"]["labels"] = {"owner": "occ", "kubernetes.io/service-name": "forged"}
    clients.core.patch_namespaced_service(
        "web", ns, service, field_manager=MANAGER, force=True, _content_type=APPLY
    )
    (endpoint_slice,) = clients.discovery.list_namespaced_endpoint_slice(
        ns, label_selector="owner=occ"
    ).items
    assert present(present(endpoint_slice.metadata).labels)["kubernetes.io/service-name"] == "web"


def test_auto_rollout_follows_spec_changes_and_scaling_to_zero(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.simulation.auto_rollout = True
    clients.core.patch_namespaced_service(
        "web", ns, _service(), field_manager=MANAGER, force=True, _content_type=APPLY
    )
    _apply_deployment(clients, ns, _deployment())
    deployment = clients.apps.read_namespaced_deployment("web", ns)
    assert present(deployment.status).ready_replicas == 1
    assert [ready for _, ready in _ready_addresses(clients, ns, "web")] == [True]
    _apply_deployment(clients, ns, _deployment(replicas=0))
    deployment = clients.apps.read_namespaced_deployment("web", ns)
    assert present(deployment.status).observed_generation == present(deployment.metadata).generation
    assert (present(deployment.status).replicas or 0) == 0
    assert _ready_addresses(clients, ns, "web") == []
    assert clients.core.list_namespaced_pod(ns).items == []


# -- faults, access, authentication ------------------------------------------------------


def test_injected_errors_are_answered_then_the_server_recovers(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.inject("GET", r"/namespaces/team-a$", status=500)
    with pytest.raises(exceptions.ServiceException):
        clients.core.read_namespace(ns)
    fake.inject("GET", r"/namespaces/team-a$", status=429, retry_after=7)
    with pytest.raises(exceptions.ApiException) as raised:
        clients.core.read_namespace(ns)
    assert raised.value.status == 429 and present(raised.value.headers)["Retry-After"] == "7"
    assert _reason(raised.value) == "TooManyRequests"
    assert present(clients.core.read_namespace(ns).metadata).name == ns
    assert [request.status for request in fake.journal[-3:]] == [500, 429, 200]


def test_a_slow_answer_makes_the_client_time_out(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.inject("GET", r"/namespaces/team-a$", delay_s=1.0)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        clients.core.read_namespace(ns, _request_timeout=0.5)


def test_a_closed_connection_is_a_transport_error(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.inject("*", r"/namespaces/team-a$", close=True)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        clients.core.read_namespace(ns)
    assert fake.journal[-1].status is None
    assert present(clients.core.read_namespace(ns).metadata).name == ns


def test_denied_verbs_are_forbidden_and_reported_by_access_reviews(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.deny("delete", "configmaps", ns)

    def allowed(verb: str, resource: str) -> bool:
        review = clients.authorization.create_self_subject_access_review(
            wire(
                {
                    "spec": {
                        "resourceAttributes": {"namespace": ns, "verb": verb, "resource": resource}
                    }
                }
            )
        )
        return bool(present(review.status).allowed)

    assert allowed("create", "configmaps") and not allowed("delete", "configmaps")
    clients.core.create_namespaced_config_map(ns, wire({"metadata": {"name": "cfg"}}))
    with pytest.raises(exceptions.ForbiddenException):
        clients.core.delete_namespaced_config_map("cfg", ns)


def test_a_stopped_server_refuses_connections_and_restarts_at_the_same_url(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    url = fake.url
    clients.core.read_namespace(ns)  # leaves a keep-alive connection in the client's pool
    fake.stop()
    try:
        with pytest.raises(urllib3.exceptions.HTTPError):
            clients.core.read_namespace(ns)
    finally:
        fake.start()
    assert fake.url == url
    assert present(clients.core.read_namespace(ns).metadata).name == ns


def test_a_wrong_bearer_token_is_unauthorized(fake: kube_api.FakeKubeAPI) -> None:
    with (
        api_client_for(fake, token="wrong") as api_client,
        pytest.raises(exceptions.UnauthorizedException),
    ):
        client.CoreV1Api(api_client).list_namespace()


def test_version_reports_the_configured_server_version(
    clients: Clients, fake: kube_api.FakeKubeAPI
) -> None:
    fake.server_version = ("1", "31")
    info = client.VersionApi(clients.api_client).get_code()
    assert (info.major, info.minor, info.git_version) == ("1", "31", "v1.31.0")


def test_kubeconfig_file_is_usable(fake: kube_api.FakeKubeAPI, tmp_path: Any) -> None:
    path = fake.write_kubeconfig(tmp_path / "kubeconfig")
    with config.new_client_from_config(config_file=str(path)) as api_client:
        assert client.CoreV1Api(api_client).list_namespace().items == []
