"""``/v1/roles``, ``/v1/access-bindings`` and ``/v1/restrictions`` over HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.support import problem
from tests.integration.web.test_principals import (
    call,
    events,
    member,
    pointers,
    refused_at,
    revoked_caller,
    state,
)
from tests.support import rows
from tests.support.responses import json_of


def create(client: FlaskClient, admin: Caller, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body, headers=admin.headers)
    assert response.status_code == 201, response.json
    data: dict[str, Any] = json_of(response)["data"]
    return data


def role(
    client: FlaskClient,
    admin: Caller,
    *permissions: str,
    name: str = "readers",
    namespace_id: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "permissions": list(permissions)}
    if namespace_id is not None:
        body["namespaceId"] = namespace_id
    return create(client, admin, "/v1/roles", body)


def bind(
    client: FlaskClient, admin: Caller, role_id: str, principal_id: str, **scope: Any
) -> dict[str, Any]:
    """A binding ``admin`` creates over HTTP; ``scope`` adds ``namespaceId`` or ``resource``."""
    body = {"roleId": role_id, "principalId": principal_id, **scope}
    return create(client, admin, "/v1/access-bindings", body)


def namespace(client: FlaskClient, admin: Caller, name: str = "team") -> str:
    return str(create(client, admin, "/v1/namespaces", {"name": name})["id"])


# -- roles --------------------------------------------------------------------------------------


def test_role_create_read_list_and_soft_delete(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    created = role(client, admin, "namespace:read", "installation:read", "namespace:read")
    assert set(created) == {"id", "name", "namespaceId", "permissions", "createdAt", "deletedAt"}
    assert ids.is_valid("role", created["id"])
    assert created["permissions"] == ["installation:read", "namespace:read"]
    assert (created["namespaceId"], created["deletedAt"]) == (None, None)

    read = client.get(f"/v1/roles/{created['id']}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == created
    listed = json_of(client.get("/v1/roles", headers=admin.headers))["data"]
    assert [r["name"] for r in listed] == ["Installation administrator", "readers"]

    deleted = client.delete(f"/v1/roles/{created['id']}", headers=admin.headers)
    assert deleted.status_code == 200 and json_of(deleted)["data"]["deletedAt"] is not None
    again = client.delete(f"/v1/roles/{created['id']}", headers=admin.headers)
    assert again.status_code == 200 and json_of(again)["data"] == json_of(deleted)["data"]
    assert (
        json_of(client.get(f"/v1/roles/{created['id']}", headers=admin.headers))["data"][
            "deletedAt"
        ]
        is not None
    )
    listed = json_of(client.get("/v1/roles", headers=admin.headers))["data"]
    assert [r["name"] for r in listed] == ["Installation administrator"]
    assert [e.action for e in events(db, resource_id=created["id"])] == [
        "roles.delete",
        "roles.create",
    ]

    reused = role(client, admin, "namespace:read")  # a deleted Role frees its name
    assert reused["id"] != created["id"]


def test_duplicate_live_role_name_conflicts(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    role(client, admin, "namespace:read")
    before = state(db)
    response = client.post(
        "/v1/roles", json={"name": "readers", "permissions": ["agent:read"]}, headers=admin.headers
    )
    problem(response, 409, "RESOURCE_CONFLICT")
    assert state(db) == before


def test_namespace_roles(client: FlaskClient, admin: Caller) -> None:
    namespace_id = namespace(client, admin)
    scoped = role(client, admin, "agent:read", namespace_id=namespace_id)
    assert scoped["namespaceId"] == namespace_id
    same_name = role(client, admin, "agent:read", namespace_id=None)  # other scope, same name
    assert same_name["namespaceId"] is None
    forbidden_permission = client.post(
        "/v1/roles",
        headers=admin.headers,
        json={
            "name": "admins",
            "permissions": ["agent:read", "installation:administer"],
            "namespaceId": namespace_id,
        },
    )
    assert pointers(forbidden_permission) == ["/permissions/1"]
    unknown = client.post(
        "/v1/roles",
        headers=admin.headers,
        json={"name": "x", "permissions": ["agent:read"], "namespaceId": ids.new("namespace")},
    )
    problem(unknown, 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": "r", "permissions": ["namespace:read", "namespace:fly"]}, "/permissions/1"),
        ({"name": "r", "permissions": ["installation"]}, "/permissions/0"),
        ({"name": "r", "permissions": [7]}, "/permissions/0"),
        ({"name": "r", "permissions": []}, "/permissions"),
        ({"name": "r", "permissions": "namespace:read"}, "/permissions"),
        ({"name": "r"}, "/permissions"),
        ({"name": "r ", "permissions": ["namespace:read"]}, "/name"),
        ({"permissions": ["namespace:read"]}, "/name"),
        ({"name": "r", "permissions": ["namespace:read"], "namespaceId": "ns_x"}, "/namespaceId"),
        ({"name": "r", "permissions": ["namespace:read"], "scope": "all"}, "/scope"),
    ],
)
def test_role_rejects_bad_input_with_the_pointer(
    db: Database, client: FlaskClient, admin: Caller, body: dict[str, Any], pointer: str
) -> None:
    refused_at(db, client, admin, "/v1/roles", body, pointer)


# -- access bindings ----------------------------------------------------------------------------


def test_binding_grants_until_revoked(db: Database, client: FlaskClient, admin: Caller) -> None:
    reader = member(db, name="reader")
    problem(client.get("/v1/installation", headers=reader.headers), 403, "FORBIDDEN")
    readers = role(client, admin, "installation:read")
    binding = bind(client, admin, readers["id"], reader.principal_id)
    assert set(binding) == {
        "id",
        "roleId",
        "principalId",
        "namespaceId",
        "resource",
        "createdBy",
        "createdAt",
        "revokedAt",
    }
    assert (binding["namespaceId"], binding["resource"], binding["createdBy"]) == (
        None,
        None,
        admin.principal_id,
    )
    assert client.get("/v1/installation", headers=reader.headers).status_code == 200

    read = client.get(f"/v1/access-bindings/{binding['id']}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == binding
    listed = json_of(client.get("/v1/access-bindings", headers=admin.headers))["data"]
    assert binding["id"] in [b["id"] for b in listed]

    revoked = client.delete(f"/v1/access-bindings/{binding['id']}", headers=admin.headers)
    assert revoked.status_code == 200 and json_of(revoked)["data"]["revokedAt"] is not None
    problem(client.get("/v1/installation", headers=reader.headers), 403, "FORBIDDEN")
    again = client.delete(f"/v1/access-bindings/{binding['id']}", headers=admin.headers)
    assert again.status_code == 200 and json_of(again)["data"] == json_of(revoked)["data"]
    listed = json_of(client.get("/v1/access-bindings", headers=admin.headers))["data"]
    assert binding["id"] not in [b["id"] for b in listed]
    assert [e.action for e in events(db, resource_id=binding["id"])] == [
        "access_bindings.revoke",
        "access_bindings.create",
    ]


def test_deleting_a_role_stops_its_bindings(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    reader = member(db, name="reader")
    readers = role(client, admin, "installation:read")
    bind(client, admin, readers["id"], reader.principal_id)
    assert client.get("/v1/installation", headers=reader.headers).status_code == 200
    client.delete(f"/v1/roles/{readers['id']}", headers=admin.headers)
    problem(client.get("/v1/installation", headers=reader.headers), 403, "FORBIDDEN")
    late = client.post(
        "/v1/access-bindings",
        headers=admin.headers,
        json={"roleId": readers["id"], "principalId": reader.principal_id},
    )
    problem(late, 404, "NOT_FOUND")


def test_namespace_and_resource_bindings(db: Database, client: FlaskClient, admin: Caller) -> None:
    namespace_id = namespace(client, admin)
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id)
    viewer = member(db, name="viewer")
    viewers = role(client, admin, "namespace:read", "agent:read")

    def view(**scope: Any) -> dict[str, Any]:
        return bind(client, admin, viewers["id"], viewer.principal_id, **scope)

    in_namespace = view(namespaceId=namespace_id)
    assert (in_namespace["namespaceId"], in_namespace["resource"]) == (namespace_id, None)
    assert client.get(f"/v1/namespaces/{namespace_id}", headers=viewer.headers).status_code == 200

    on_namespace = view(resource={"kind": "namespace", "id": namespace_id})
    assert on_namespace["namespaceId"] == namespace_id
    assert on_namespace["resource"] == {"kind": "namespace", "id": namespace_id}

    on_agent = view(namespaceId=namespace_id, resource={"kind": "agent", "id": agent_id})
    assert on_agent["resource"] == {"kind": "agent", "id": agent_id}

    installation_id = json_of(client.get("/v1/installation", headers=admin.headers))["data"]["id"]
    on_installation = view(resource={"kind": "installation", "id": installation_id})
    assert on_installation["namespaceId"] is None

    def refused(**scope: Any) -> None:
        body = {"roleId": viewers["id"], "principalId": viewer.principal_id, **scope}
        answer = client.post("/v1/access-bindings", json=body, headers=admin.headers)
        problem(answer, 404, "NOT_FOUND")

    refused(namespaceId=namespace_id, resource={"kind": "agent", "id": ids.new("agent")})
    refused(resource={"kind": "installation", "id": ids.new("installation")})


def test_namespace_roles_and_principals_stay_in_their_namespace(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    team = namespace(client, admin, "team")
    other = namespace(client, admin, "other")
    scoped_role = role(client, admin, "agent:read", namespace_id=team)
    scoped_principal = create(
        client, admin, "/v1/principals", {"name": "ci", "kind": "service", "namespaceId": team}
    )
    human = member(db, name="human")

    installation_wide = client.post(
        "/v1/access-bindings",
        headers=admin.headers,
        json={"roleId": scoped_role["id"], "principalId": human.principal_id},
    )
    assert pointers(installation_wide) == ["/roleId"]
    elsewhere = client.post(
        "/v1/access-bindings",
        headers=admin.headers,
        json={
            "roleId": role(client, admin, "agent:read", name="any")["id"],
            "principalId": scoped_principal["id"],
            "namespaceId": other,
        },
    )
    assert pointers(elsewhere) == ["/principalId"]
    bind(client, admin, scoped_role["id"], scoped_principal["id"], namespaceId=team)


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"roleId": "rol_x", "principalId": "{principal}"}, "/roleId"),
        ({"roleId": "{role}", "principalId": "prn_x"}, "/principalId"),
        ({"principalId": "{principal}"}, "/roleId"),
        ({"roleId": "{role}"}, "/principalId"),
        ({"roleId": "{role}", "principalId": "{principal}", "namespaceId": 3}, "/namespaceId"),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "resource": {"kind": "galaxy", "id": "x"},
            },
            "/resource/kind",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "resource": {"kind": "agent", "id": "agt_x"},
                "namespaceId": "{namespace}",
            },
            "/resource/id",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "resource": {"kind": "agent", "id": "{namespace}"},
                "namespaceId": "{namespace}",
            },
            "/resource/id",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "resource": {"kind": "agent", "id": "{agent}"},
            },
            "/namespaceId",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "namespaceId": "{namespace}",
                "resource": {"kind": "installation", "id": "{installation}"},
            },
            "/namespaceId",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "namespaceId": "{other}",
                "resource": {"kind": "namespace", "id": "{namespace}"},
            },
            "/namespaceId",
        ),
        (
            {"roleId": "{role}", "principalId": "{principal}", "resource": {"kind": "agent"}},
            "/resource/id",
        ),
        (
            {
                "roleId": "{role}",
                "principalId": "{principal}",
                "resource": {"kind": "agent", "id": "{agent}", "colour": "red"},
            },
            "/resource/colour",
        ),
        ({"roleId": "{role}", "principalId": "{principal}", "resource": "everything"}, "/resource"),
        ({"roleId": "{role}", "principalId": "{principal}", "runtimeRole": "x"}, "/runtimeRole"),
    ],
)
def test_binding_rejects_bad_input_with_the_pointer(
    db: Database, client: FlaskClient, admin: Caller, body: dict[str, Any], pointer: str
) -> None:
    namespace_id = namespace(client, admin)
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id)
    names = {
        "role": role(client, admin, "agent:read")["id"],
        "principal": member(db).principal_id,
        "namespace": namespace_id,
        "other": namespace(client, admin, "other"),
        "agent": agent_id,
        "installation": json_of(client.get("/v1/installation", headers=admin.headers))["data"][
            "id"
        ],
    }

    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return value.format(**names) if isinstance(value, str) else value

    refused_at(db, client, admin, "/v1/access-bindings", fill(body), pointer)


def test_binding_to_unknown_things_is_not_found(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    readers = role(client, admin, "installation:read")
    somebody = member(db, name="somebody")
    for body in (
        {"roleId": ids.new("role"), "principalId": somebody.principal_id},
        {"roleId": readers["id"], "principalId": ids.new("principal")},
        {
            "roleId": readers["id"],
            "principalId": somebody.principal_id,
            "namespaceId": ids.new("namespace"),
        },
    ):
        problem(
            client.post("/v1/access-bindings", json=body, headers=admin.headers), 404, "NOT_FOUND"
        )


def test_the_last_administrator_cannot_be_removed(
    db: Database, client: FlaskClient, admin: Caller
) -> None:
    [admin_binding] = [
        b
        for b in json_of(client.get("/v1/access-bindings", headers=admin.headers))["data"]
        if b["principalId"] == admin.principal_id
    ]
    before = state(db)
    for method, path, body in [
        ("DELETE", f"/v1/access-bindings/{admin_binding['id']}", None),
        ("DELETE", f"/v1/roles/{admin_binding['roleId']}", None),
        ("POST", "/v1/restrictions", {"permission": "installation:administer"}),
        (
            "POST",
            "/v1/restrictions",
            {"permission": "installation:administer", "principalId": admin.principal_id},
        ),
    ]:
        problem(call(client, method, path, body, admin.headers), 409, "LAST_ADMINISTRATOR")
    # nothing changed but the audit of the four refusals
    assert state(db) == {**before, "denials": before["denials"] + 4}

    deputy = member(db, "installation:administer", name="deputy")
    revoked = client.delete(f"/v1/access-bindings/{admin_binding['id']}", headers=admin.headers)
    assert revoked.status_code == 200
    problem(client.get("/v1/roles", headers=admin.headers), 403, "FORBIDDEN")
    assert client.get("/v1/roles", headers=deputy.headers).status_code == 200


# -- restrictions -------------------------------------------------------------------------------


def test_restriction_denies_until_deleted(db: Database, client: FlaskClient, admin: Caller) -> None:
    reader = member(db, "installation:read", name="reader")
    assert client.get("/v1/installation", headers=reader.headers).status_code == 200
    rule = create(
        client,
        admin,
        "/v1/restrictions",
        {"permission": "installation:read", "principalId": reader.principal_id},
    )
    assert set(rule) == {
        "id",
        "permission",
        "principalId",
        "namespaceId",
        "resourceId",
        "createdBy",
        "createdAt",
    }
    assert (
        rule["permission"],
        rule["principalId"],
        rule["namespaceId"],
        rule["resourceId"],
        rule["createdBy"],
    ) == ("installation:read", reader.principal_id, None, None, admin.principal_id)
    problem(client.get("/v1/installation", headers=reader.headers), 403, "FORBIDDEN")
    assert client.get("/v1/installation", headers=admin.headers).status_code == 200

    read = client.get(f"/v1/restrictions/{rule['id']}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == rule
    assert [
        r["id"] for r in json_of(client.get("/v1/restrictions", headers=admin.headers))["data"]
    ] == [rule["id"]]

    deleted = client.delete(f"/v1/restrictions/{rule['id']}", headers=admin.headers)
    assert deleted.status_code == 200 and json_of(deleted)["data"] == rule
    assert client.get("/v1/installation", headers=reader.headers).status_code == 200
    problem(client.get(f"/v1/restrictions/{rule['id']}", headers=admin.headers), 404, "NOT_FOUND")
    problem(
        client.delete(f"/v1/restrictions/{rule['id']}", headers=admin.headers), 404, "NOT_FOUND"
    )
    assert [e.action for e in events(db, resource_id=rule["id"])] == [
        "restrictions.delete",
        "restrictions.create",
    ]


def test_narrowed_restrictions(client: FlaskClient, admin: Caller) -> None:
    namespace_id = namespace(client, admin)
    rule = create(
        client,
        admin,
        "/v1/restrictions",
        {"permission": "namespace:delete", "namespaceId": namespace_id, "resourceId": namespace_id},
    )
    assert (rule["namespaceId"], rule["resourceId"]) == (namespace_id, namespace_id)
    denied = client.delete(f"/v1/namespaces/{namespace_id}", headers=admin.headers)
    problem(denied, 403, "FORBIDDEN")


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"permission": "namespace:fly"}, "/permission"),
        ({"permission": "namespace"}, "/permission"),
        ({}, "/permission"),
        ({"permission": ["agent:read"]}, "/permission"),
        ({"permission": "agent:read", "principalId": "prn_x"}, "/principalId"),
        ({"permission": "agent:read", "namespaceId": "ns_x"}, "/namespaceId"),
        ({"permission": "agent:read", "resourceId": "agt_x"}, "/resourceId"),
        (
            {"permission": "agent:read", "resourceId": "prn_0e0c2d4f-8a1b-4c3d-9e8f-0a1b2c3d4e5f"},
            "/resourceId",
        ),
        ({"permission": "agent:read", "effect": "deny"}, "/effect"),
    ],
)
def test_restriction_rejects_bad_input_with_the_pointer(
    db: Database, client: FlaskClient, admin: Caller, body: dict[str, Any], pointer: str
) -> None:
    refused_at(db, client, admin, "/v1/restrictions", body, pointer)


def test_restriction_on_unknown_things_is_not_found(client: FlaskClient, admin: Caller) -> None:
    for body in (
        {"permission": "agent:read", "principalId": ids.new("principal")},
        {"permission": "agent:read", "namespaceId": ids.new("namespace")},
    ):
        problem(client.post("/v1/restrictions", json=body, headers=admin.headers), 404, "NOT_FOUND")


# -- every route: 404, 401, 403 -------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    role_id: str
    binding_id: str
    restriction_id: str
    principal_id: str

    def routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("POST", "/v1/roles", {"name": "new", "permissions": ["agent:read"]}),
            ("GET", "/v1/roles", None),
            ("GET", f"/v1/roles/{self.role_id}", None),
            ("DELETE", f"/v1/roles/{self.role_id}", None),
            (
                "POST",
                "/v1/access-bindings",
                {"roleId": self.role_id, "principalId": self.principal_id},
            ),
            ("GET", "/v1/access-bindings", None),
            ("GET", f"/v1/access-bindings/{self.binding_id}", None),
            ("DELETE", f"/v1/access-bindings/{self.binding_id}", None),
            ("POST", "/v1/restrictions", {"permission": "agent:use"}),
            ("GET", "/v1/restrictions", None),
            ("GET", f"/v1/restrictions/{self.restriction_id}", None),
            ("DELETE", f"/v1/restrictions/{self.restriction_id}", None),
        ]


@pytest.fixture
def policy(db: Database, client: FlaskClient, admin: Caller) -> Policy:
    target = member(db, name="target")
    readers = role(client, admin, "agent:read")
    binding = bind(client, admin, readers["id"], target.principal_id)
    rule = create(client, admin, "/v1/restrictions", {"permission": "agent:use"})
    return Policy(readers["id"], binding["id"], rule["id"], target.principal_id)


@pytest.mark.parametrize("prefix", ["/v1/roles", "/v1/access-bindings", "/v1/restrictions"])
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_unknown_or_malformed_ids_are_not_found(
    client: FlaskClient, admin: Caller, prefix: str, method: str
) -> None:
    for item_id in (
        ids.new("role"),
        ids.new("access_binding"),
        ids.new("restriction"),
        "rol_1",
        "bnd_1",
        "rst_1",
        "%20",
        "x" * 500,
    ):
        response = call(client, method, f"{prefix}/{item_id}", headers=admin.headers)
        problem(response, 404, "NOT_FOUND")


def test_every_route_needs_a_live_key(db: Database, client: FlaskClient, policy: Policy) -> None:
    revoked = revoked_caller(db)
    before = state(db)
    for method, path, body in policy.routes():
        problem(call(client, method, path, body), 401, "UNAUTHENTICATED")
        problem(call(client, method, path, body, revoked.headers), 401, "UNAUTHENTICATED")
    assert state(db) == before


@pytest.mark.parametrize(
    "permissions", [(), ("installation:read", "namespace:create", "namespace:read", "agent:read")]
)
def test_without_installation_administer_only_the_denial_is_written(
    db: Database, client: FlaskClient, admin: Caller, policy: Policy, permissions: tuple[str, ...]
) -> None:
    outsider = member(db, *permissions, name="outsider")
    for method, path, body in policy.routes():
        before = state(db)
        problem(call(client, method, path, body, outsider.headers), 403, "FORBIDDEN")
        assert state(db) == {**before, "denials": before["denials"] + 1}, (method, path)
    denials = events(db, kind="authorization_denial")
    assert len(denials) == len(policy.routes())
    assert {event.details["permission"] for event in denials} == {"installation:administer"}
    assert {event.action for event in denials} >= {
        "roles.create",
        "roles.delete",
        "access_bindings.create",
        "access_bindings.revoke",
        "restrictions.create",
        "restrictions.delete",
    }
    creation = next(event for event in denials if event.action == "roles.create")
    assert creation.details["request"] == {"name": "new", "permissions": ["agent:read"]}
    # nothing moved: the binding and the restriction still answer
    assert (
        json_of(client.get(f"/v1/access-bindings/{policy.binding_id}", headers=admin.headers))[
            "data"
        ]["revokedAt"]
        is None
    )
    assert (
        client.get(f"/v1/restrictions/{policy.restriction_id}", headers=admin.headers).status_code
        == 200
    )
