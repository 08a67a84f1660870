"""``/v1/namespaces`` over HTTP."""

from __future__ import annotations

import threading
from pathlib import Path

from flask.testing import FlaskClient

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import audit, values
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.support.responses import json_of

POLICY = values.QueuePolicy()


def test_create_read_list_delete(client: FlaskClient, admin: Caller) -> None:
    created = client.post("/v1/namespaces", json={"name": "team-a"}, headers=admin.headers)
    assert created.status_code == 201, created.json
    body = json_of(created)
    assert body["data"]["status"] == "provisioning"
    assert body["meta"]["requestId"] == created.headers["X-Request-Id"]
    namespace_id = body["data"]["id"]
    read = client.get(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"]["name"] == "team-a"
    listed = client.get("/v1/namespaces", headers=admin.headers)
    assert [n["id"] for n in json_of(listed)["data"]] == [namespace_id]
    deleted = client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert deleted.status_code == 202 and json_of(deleted)["data"]["status"] == "deleting"


def test_bad_name_points_at_the_field(client: FlaskClient, admin: Caller) -> None:
    response = client.post("/v1/namespaces", json={"name": " padded"}, headers=admin.headers)
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"
    assert json_of(response)["code"] == "INVALID_REQUEST"
    assert json_of(response)["errors"][0]["pointer"] == "/name"


def test_unknown_fields_are_rejected(client: FlaskClient, admin: Caller) -> None:
    response = client.post(
        "/v1/namespaces", json={"name": "x", "colour": "red"}, headers=admin.headers
    )
    assert response.status_code == 400
    assert {"pointer": "/colour", "message": "Unknown field."} in json_of(response)["errors"]


def test_without_a_key(client: FlaskClient, admin: Caller) -> None:
    response = client.get("/v1/namespaces")
    assert response.status_code == 401 and json_of(response)["code"] == "UNAUTHENTICATED"
    forged = client.get("/v1/namespaces", headers={"Authorization": admin.key[:-4] + "0000"})
    assert forged.status_code == 401


def _run_all_work(db: Database, local_root: Path) -> None:
    """Claim and run every due work item in-process (what the worker fleet would do)."""
    driver = LocalComputeDriver(local_root)
    worker = Worker(
        database=db, policy=POLICY, driver=driver, shutdown=threading.Event(), settings=Settings()
    )
    for claim in executor.claim_batch(db, POLICY, max_in_flight=5):
        executor.run(worker, claim.work_id, str(claim.token))


def test_deleting_a_namespace_disables_its_service_principals(
    client: FlaskClient, admin: Caller, db: Database, tmp_path: Path
) -> None:
    created = client.post("/v1/namespaces", json={"name": "short-lived"}, headers=admin.headers)
    namespace_id = json_of(created)["data"]["id"]
    _run_all_work(db, tmp_path / "local")
    ready = client.get(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert json_of(ready)["data"]["status"] == "ready"

    robot = json_of(
        client.post(
            "/v1/principals",
            json={"name": "ci robot", "kind": "service", "namespaceId": namespace_id},
            headers=admin.headers,
        )
    )["data"]
    minted = client.post(f"/v1/principals/{robot['id']}/api-keys", json={}, headers=admin.headers)
    robot_headers = {"Authorization": f"Bearer {json_of(minted)['data']['key']}"}
    assert client.get("/v1/namespaces", headers=robot_headers).status_code == 200

    deleting = client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert deleting.status_code == 202
    # still able to sign in while the deletion is only admitted
    assert client.get("/v1/namespaces", headers=robot_headers).status_code == 200
    _run_all_work(db, tmp_path / "local")

    refused = client.get("/v1/namespaces", headers=robot_headers)
    assert refused.status_code == 401 and json_of(refused)["code"] == "UNAUTHENTICATED"
    principal = json_of(client.get(f"/v1/principals/{robot['id']}", headers=admin.headers))["data"]
    assert principal["disabledAt"] is not None
    [key] = json_of(client.get(f"/v1/principals/{robot['id']}/api-keys", headers=admin.headers))[
        "data"
    ]
    assert key["revokedAt"] is not None
    with db.transaction() as session:
        [event] = [
            e
            for e in audit.list_events(session, resource_id=robot["id"])
            if e.action == "principals.disable"
        ]
    assert (event.actor_id, event.namespace_id, event.work_id) == (
        admin.principal_id,
        namespace_id,
        f"namespace:{namespace_id}:reconcile:deleted",
    )
    assert event.details == {"reason": "namespace_deleted", "revokedKeyIds": [key["id"]]}
    # the administrator, in no Namespace, is untouched
    assert client.get("/v1/namespaces", headers=admin.headers).status_code == 200
