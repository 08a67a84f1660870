"""``/v1/namespaces`` over HTTP."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.integration.web.conftest import Caller


def test_create_read_list_delete(client: FlaskClient, admin: Caller) -> None:
    created = client.post("/v1/namespaces", json={"name": "team-a"}, headers=admin.headers)
    assert created.status_code == 201, created.json
    body = created.json
    assert body["data"]["status"] == "provisioning"
    assert body["meta"]["requestId"] == created.headers["X-Request-Id"]
    namespace_id = body["data"]["id"]
    read = client.get(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert read.status_code == 200 and read.json["data"]["name"] == "team-a"
    listed = client.get("/v1/namespaces", headers=admin.headers)
    assert [n["id"] for n in listed.json["data"]] == [namespace_id]
    deleted = client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    assert deleted.status_code == 202 and deleted.json["data"]["status"] == "deleting"


def test_bad_name_points_at_the_field(client: FlaskClient, admin: Caller) -> None:
    response = client.post("/v1/namespaces", json={"name": " padded"}, headers=admin.headers)
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"
    assert response.json["code"] == "INVALID_REQUEST"
    assert response.json["errors"][0]["pointer"] == "/name"


def test_unknown_fields_are_rejected(client: FlaskClient, admin: Caller) -> None:
    response = client.post(
        "/v1/namespaces", json={"name": "x", "colour": "red"}, headers=admin.headers
    )
    assert response.status_code == 400
    assert {"pointer": "/colour", "message": "Unknown field."} in response.json["errors"]


def test_without_a_key(client: FlaskClient, admin: Caller) -> None:
    response = client.get("/v1/namespaces")
    assert response.status_code == 401 and response.json["code"] == "UNAUTHENTICATED"
    forged = client.get("/v1/namespaces", headers={"Authorization": admin.key[:-4] + "0000"})
    assert forged.status_code == 401
