"""``/v1/principals`` and their API keys over HTTP: create, read, list, mint, list, revoke."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from occ.foundation import ids
from occ.state import api_keys, audit, iam_policy
from occ.state.db import Database
from tests.integration.web import support
from tests.integration.web.conftest import Caller
from tests.integration.web.support import problem
from tests.support import grants, rows
from tests.support.responses import json_of

# -- helpers shared with test_iam_routes ---------------------------------------------------------


def member(db: Database, *permissions: str, name: str = "member") -> Caller:
    """A principal with an API key and, when given, an Installation-wide grant."""
    return support.caller(db, *permissions, name=name)


def revoked_caller(db: Database) -> Caller:
    """An administrator whose only key is revoked."""
    return support.revoked_caller(db, "installation:administer", name="former administrator")


_STATE_QUERIES = {
    "principals": "SELECT count(*) FROM occ.principals",
    "enabledPrincipals": "SELECT count(*) FROM occ.principals WHERE disabled_at IS NULL",
    "keys": "SELECT count(*) FROM occ.api_keys",
    "liveKeys": "SELECT count(*) FROM occ.api_keys WHERE revoked_at IS NULL",
    "roles": "SELECT count(*) FROM occ.roles",
    "liveRoles": "SELECT count(*) FROM occ.roles WHERE deleted_at IS NULL",
    "bindings": "SELECT count(*) FROM occ.access_bindings",
    "liveBindings": "SELECT count(*) FROM occ.access_bindings WHERE revoked_at IS NULL",
    "restrictions": "SELECT count(*) FROM occ.restrictions",
    "work": "SELECT count(*) FROM occ.controller_work",
    "audit": "SELECT count(*) FROM occ.audit_events WHERE kind <> 'authorization_denial'",
    "denials": "SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial'",
}


def state(db: Database) -> dict[str, int]:
    """Row counts of everything an IAM route could write."""
    with db.transaction() as session:
        return {
            name: int(session.scalar(sa.text(query)) or 0) for name, query in _STATE_QUERIES.items()
        }


def events(db: Database, **filters: Any) -> list[audit.AuditEvent]:
    with db.transaction() as session:
        return audit.list_events(session, **filters)


def pointers(response: TestResponse) -> list[str]:
    body = problem(response, 400, "INVALID_REQUEST")
    return [error["pointer"] for error in body["errors"]]


def refused_at(
    db: Database, client: FlaskClient, admin: Caller, path: str, body: Any, pointer: str
) -> None:
    """POSTing ``body`` to ``path`` is refused as invalid at ``pointer``; nothing is written."""
    before = state(db)
    assert pointer in pointers(client.post(path, json=body, headers=admin.headers))
    assert state(db) == before


def call(
    client: FlaskClient,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> TestResponse:
    return client.open(path, method=method, json=body, headers=headers or {})


# -- principals ---------------------------------------------------------------------------------


def test_create_read_and_list_principals(client: FlaskClient, admin: Caller) -> None:
    created = client.post(
        "/v1/principals", json={"name": "deploy bot", "kind": "service"}, headers=admin.headers
    )
    assert created.status_code == 201, created.json
    principal = json_of(created)["data"]
    assert set(principal) == {
        "id",
        "name",
        "kind",
        "namespaceId",
        "agentId",
        "createdAt",
        "disabledAt",
    }
    assert ids.is_valid("principal", principal["id"])
    assert (
        principal["name"],
        principal["kind"],
        principal["namespaceId"],
        principal["agentId"],
        principal["disabledAt"],
    ) == ("deploy bot", "service", None, None, None)
    assert json_of(created)["meta"]["requestId"] == created.headers["X-Request-Id"]

    human = client.post(
        "/v1/principals", json={"name": "Ada", "kind": "human"}, headers=admin.headers
    )
    assert human.status_code == 201 and json_of(human)["data"]["kind"] == "human"

    read = client.get(f"/v1/principals/{principal['id']}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == principal
    listed = client.get("/v1/principals", headers=admin.headers)
    assert listed.status_code == 200
    assert [p["id"] for p in json_of(listed)["data"]] == [
        admin.principal_id,
        principal["id"],
        json_of(human)["data"]["id"],
    ]


def test_create_is_audited(db: Database, client: FlaskClient, admin: Caller) -> None:
    created = client.post(
        "/v1/principals", json={"name": "bot", "kind": "service"}, headers=admin.headers
    )
    [event] = events(db, resource_id=json_of(created)["data"]["id"])
    assert (event.kind, event.action, event.actor_id, event.outcome, event.resource_kind) == (
        "mutation",
        "principals.create",
        admin.principal_id,
        "success",
        "principal",
    )
    assert event.details["name"] == "bot" and event.details["kind"] == "service"
    assert event.details["authorization"]["principalId"] == admin.principal_id


def test_service_principal_in_a_namespace(client: FlaskClient, admin: Caller) -> None:
    namespace = client.post("/v1/namespaces", json={"name": "team"}, headers=admin.headers)
    namespace_id = json_of(namespace)["data"]["id"]
    created = client.post(
        "/v1/principals",
        headers=admin.headers,
        json={"name": "ci", "kind": "service", "namespaceId": namespace_id},
    )
    assert created.status_code == 201 and json_of(created)["data"]["namespaceId"] == namespace_id

    human = client.post(
        "/v1/principals",
        headers=admin.headers,
        json={"name": "Ada", "kind": "human", "namespaceId": namespace_id},
    )
    assert pointers(human) == ["/namespaceId"]
    unknown = client.post(
        "/v1/principals",
        headers=admin.headers,
        json={"name": "ci", "kind": "service", "namespaceId": ids.new("namespace")},
    )
    problem(unknown, 404, "NOT_FOUND")

    client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    deleting = client.post(
        "/v1/principals",
        headers=admin.headers,
        json={"name": "late", "kind": "service", "namespaceId": namespace_id},
    )
    problem(deleting, 409, "RESOURCE_CONFLICT")


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": " padded", "kind": "human"}, "/name"),
        ({"name": "", "kind": "human"}, "/name"),
        ({"name": "x" * 201, "kind": "human"}, "/name"),
        ({"name": "tab\there", "kind": "human"}, "/name"),
        ({"name": 7, "kind": "human"}, "/name"),
        ({"kind": "human"}, "/name"),
        ({"name": "x", "kind": "robot"}, "/kind"),
        ({"name": "x"}, "/kind"),
        ({"name": "x", "kind": "service", "namespaceId": "ns_nope"}, "/namespaceId"),
        ({"name": "x", "kind": "service", "colour": "red"}, "/colour"),
    ],
)
def test_create_rejects_bad_input_with_the_pointer(
    db: Database, client: FlaskClient, admin: Caller, body: dict[str, Any], pointer: str
) -> None:
    refused_at(db, client, admin, "/v1/principals", body, pointer)


@pytest.mark.parametrize(
    "principal_id",
    [
        ids.new("principal"),
        "prn_not-a-uuid",
        ids.new("role"),
        "%00",
        "x" * 300,
    ],
)
def test_unknown_or_malformed_principal_is_not_found(
    client: FlaskClient, admin: Caller, principal_id: str
) -> None:
    for method, path in [
        ("GET", f"/v1/principals/{principal_id}"),
        ("POST", f"/v1/principals/{principal_id}/api-keys"),
        ("GET", f"/v1/principals/{principal_id}/api-keys"),
        ("DELETE", f"/v1/principals/{principal_id}/api-keys/{ids.new('api_key')}"),
    ]:
        problem(call(client, method, path, headers=admin.headers), 404, "NOT_FOUND")


def test_agent_principals_are_listed_and_get_no_keys(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin.principal_id)
        agent_id = rows.agent(session, namespace_id=namespace_id)
    listed = json_of(client.get("/v1/principals", headers=admin.headers))["data"]
    [owned] = [p for p in listed if p["agentId"] is not None]
    assert (owned["agentId"], owned["kind"], owned["namespaceId"]) == (
        agent_id,
        "service",
        namespace_id,
    )
    refused = client.post(f"/v1/principals/{owned['id']}/api-keys", headers=admin.headers)
    problem(refused, 409, "RESOURCE_CONFLICT")


# -- API keys -----------------------------------------------------------------------------------


def test_key_lifecycle(
    db: Database, client: FlaskClient, admin: Caller, caplog: pytest.LogCaptureFixture
) -> None:
    robot = json_of(
        client.post(
            "/v1/principals", json={"name": "robot", "kind": "service"}, headers=admin.headers
        )
    )["data"]
    grants.give(db, robot["id"], ["installation:read"])

    minted = client.post(f"/v1/principals/{robot['id']}/api-keys", headers=admin.headers)
    assert minted.status_code == 201, minted.json
    new_key = json_of(minted)["data"]
    assert set(new_key) == {"id", "key", "principalId", "createdAt"}
    assert new_key["key"].startswith(f"occ_{new_key['id']}_")
    assert new_key["principalId"] == robot["id"]
    robot_headers = {"Authorization": f"Bearer {new_key['key']}"}
    assert client.get("/v1/installation", headers=robot_headers).status_code == 200

    listed = client.get(f"/v1/principals/{robot['id']}/api-keys", headers=admin.headers)
    assert listed.status_code == 200
    [metadata] = json_of(listed)["data"]
    assert set(metadata) == {"id", "principalId", "createdAt", "revokedAt", "lastUsedAt"}
    assert metadata["id"] == new_key["id"] and metadata["revokedAt"] is None
    assert metadata["lastUsedAt"] is not None

    revoked = client.delete(
        f"/v1/principals/{robot['id']}/api-keys/{new_key['id']}", headers=admin.headers
    )
    assert revoked.status_code == 200 and json_of(revoked)["data"]["revokedAt"] is not None
    problem(client.get("/v1/installation", headers=robot_headers), 401, "UNAUTHENTICATED")

    again = client.delete(
        f"/v1/principals/{robot['id']}/api-keys/{new_key['id']}", headers=admin.headers
    )
    assert again.status_code == 200 and json_of(again)["data"] == json_of(revoked)["data"]
    actions = [event.action for event in events(db, resource_id=new_key["id"])]
    assert actions == ["api_keys.revoke", "api_keys.create"]

    secret = new_key["key"].rsplit("_", 1)[1]
    with db.transaction() as session:
        details = session.scalars(sa.text("SELECT details::text FROM occ.audit_events")).all()
        hashes = session.scalars(sa.text("SELECT secret_hash FROM occ.api_keys")).all()
    assert not any(secret in text for text in details)
    assert secret not in hashes
    assert secret not in caplog.text


def test_a_principal_may_hold_several_keys(client: FlaskClient, admin: Caller) -> None:
    second = client.post(
        f"/v1/principals/{admin.principal_id}/api-keys", json={}, headers=admin.headers
    )
    assert second.status_code == 201
    headers = {"Authorization": f"Bearer {json_of(second)['data']['key']}"}
    assert client.get("/v1/principals", headers=headers).status_code == 200
    keys = client.get(f"/v1/principals/{admin.principal_id}/api-keys", headers=admin.headers)
    assert len(json_of(keys)["data"]) == 2


def test_key_body_must_be_an_empty_object(client: FlaskClient, admin: Caller) -> None:
    response = client.post(
        f"/v1/principals/{admin.principal_id}/api-keys",
        json={"name": "laptop"},
        headers=admin.headers,
    )
    assert pointers(response) == ["/name"]
    text = client.post(
        f"/v1/principals/{admin.principal_id}/api-keys",
        data="{}",
        headers={**admin.headers, "Content-Type": "text/plain"},
    )
    problem(text, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_revoking_another_principals_key_is_not_found(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    other = member(db, name="other")
    [key] = json_of(
        client.get(f"/v1/principals/{other.principal_id}/api-keys", headers=admin.headers)
    )["data"]
    for key_id in (key["id"], ids.new("api_key"), "key_malformed"):
        response = client.delete(
            f"/v1/principals/{admin.principal_id}/api-keys/{key_id}", headers=admin.headers
        )
        problem(response, 404, "NOT_FOUND")
    assert client.get("/v1/principals", headers=other.headers).status_code == 403  # still live


def test_disabled_principals_get_no_keys(db: Database, client: FlaskClient, admin: Caller) -> None:
    other = member(db, name="leaver")
    with db.transaction() as session:
        iam_policy.disable_principal(session, other.principal_id)
    before = state(db)
    response = client.post(f"/v1/principals/{other.principal_id}/api-keys", headers=admin.headers)
    problem(response, 409, "RESOURCE_CONFLICT")
    assert state(db) == before


# -- authentication and authorization of every route ---------------------------------------------


def routes(admin_id: str, key_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("POST", "/v1/principals", {"name": "x", "kind": "human"}),
        ("GET", "/v1/principals", None),
        ("GET", f"/v1/principals/{admin_id}", None),
        ("POST", f"/v1/principals/{admin_id}/api-keys", {}),
        ("GET", f"/v1/principals/{admin_id}/api-keys", None),
        ("DELETE", f"/v1/principals/{admin_id}/api-keys/{key_id}", None),
    ]


def _admin_key_id(admin: Caller) -> str:
    parsed = api_keys.parse(admin.key)
    assert parsed is not None
    return parsed[0]


def test_every_route_needs_a_live_key(db: Database, client: FlaskClient, admin: Caller) -> None:
    revoked = revoked_caller(db)
    before = state(db)
    for method, path, body in routes(admin.principal_id, _admin_key_id(admin)):
        problem(call(client, method, path, body), 401, "UNAUTHENTICATED")
        problem(call(client, method, path, body, revoked.headers), 401, "UNAUTHENTICATED")
        problem(
            call(client, method, path, body, {"Authorization": "Basic YWRtaW4="}),
            401,
            "UNAUTHENTICATED",
        )
    assert state(db) == before


@pytest.mark.parametrize("permissions", [(), ("installation:read", "namespace:create")])
def test_without_installation_administer_only_the_denial_is_written(
    db: Database, client: FlaskClient, admin: Caller, permissions: tuple[str, ...]
) -> None:
    outsider = member(db, *permissions, name="outsider")
    for method, path, body in routes(admin.principal_id, _admin_key_id(admin)):
        before = state(db)
        response = call(client, method, path, body, outsider.headers)
        problem(response, 403, "FORBIDDEN")
        after = state(db)
        assert after == {**before, "denials": before["denials"] + 1}, (method, path)
    denials = events(db, kind="authorization_denial")
    assert {event.actor_id for event in denials} == {outsider.principal_id}
    assert {event.details["permission"] for event in denials} == {"installation:administer"}
    assert {event.resource_kind for event in denials} == {"installation"}
    assert "api_keys.create" in {event.action for event in denials}
    # the admin's key still works: the denied DELETE revoked nothing
    assert client.get("/v1/principals", headers=admin.headers).status_code == 200


def test_an_unknown_principal_is_forbidden_before_it_is_looked_up(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    outsider = member(db, name="outsider")
    response = client.get(f"/v1/principals/{ids.new('principal')}", headers=outsider.headers)
    problem(response, 403, "FORBIDDEN")


def test_key_never_appears_in_the_openapi_request_schema(client: FlaskClient) -> None:
    document = json_of(client.get("/v1/openapi.json"))
    body = document["components"]["schemas"]["ApiKeyCreate"]
    assert body.get("properties", {}) == {}
    responses = document["paths"]["/v1/principals/{principal_id}/api-keys"]["post"]
    assert "201" in responses["responses"]
    assert json.dumps(document["components"]["schemas"]["ApiKey"]).find('"key"') == -1
