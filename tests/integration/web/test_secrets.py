"""``/v1/namespaces/{ns}/secrets`` over HTTP: the value goes in and never comes out."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.settings.config import Settings
from occ.state import models, secret_store
from occ.state import secrets as secret_rows
from occ.state.db import Database
from tests.integration.web import support
from tests.integration.web.conftest import Caller
from tests.integration.web.support import caller, problem
from tests.support import rows
from tests.support.responses import json_of

VALUE = "sk-live-\u00e9\u6771-never-shown-7f3a9c"
ALL = ("secret:create", "secret:read", "secret:delete")


def base(namespace_id: str) -> str:
    return f"/v1/namespaces/{namespace_id}/secrets"


def create(
    client: FlaskClient, who: Caller, namespace_id: str, name: str = "token", value: Any = VALUE
) -> Any:
    return client.post(base(namespace_id), json={"name": name, "value": value}, headers=who.headers)


def test_create_read_list_delete_never_show_the_value(
    client: FlaskClient,
    db: Database,
    owner_db: Database,
    admin: Caller,
    ns: str,
    settings: Settings,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    bodies: list[bytes] = []

    created = create(client, admin, ns)
    bodies.append(created.data)
    assert created.status_code == 201, created.json
    data = json_of(created)["data"]
    assert set(data) == {"id", "namespaceId", "name", "createdAt", "updatedAt"}
    assert (data["namespaceId"], data["name"]) == (ns, "token")
    item = f"{base(ns)}/{data['id']}"

    read = client.get(item, headers=admin.headers)
    listed = client.get(base(ns), headers=admin.headers)
    bodies += [read.data, listed.data]
    assert read.status_code == 200 and json_of(read)["data"] == data
    assert listed.status_code == 200 and json_of(listed)["data"] == [data]

    # failures around the value: a duplicate, an unknown field, a value too long
    bodies.append(create(client, admin, ns).data)
    bodies.append(
        client.post(base(ns), json={"name": "x", "valeu": VALUE}, headers=admin.headers).data
    )
    bodies.append(create(client, admin, ns, name="long", value=VALUE * 5000).data)
    bodies.append(client.get("/v1/openapi.json").data)

    # the stored column is a ciphertext that opens only for this row, with this key
    with db.transaction() as session:
        sealed = secret_rows.sealed_value(session, ns, data["id"])
    assert sealed is not None
    assert VALUE.encode() not in sealed and sealed != VALUE.encode()
    assert secret_store.decrypt(settings, data["id"], sealed) == VALUE
    with pytest.raises(secret_store.SecretUnreadable):
        secret_store.decrypt(settings, ids.new("secret"), sealed)

    deleted = client.delete(item, headers=admin.headers)
    bodies.append(deleted.data)
    assert deleted.status_code == 204 and deleted.data == b""
    problem(client.get(item, headers=admin.headers), 404, "NOT_FOUND")

    encoded = (VALUE.encode(), json.dumps(VALUE).encode())
    for body in bodies:
        assert not any(form in body for form in encoded)
    with owner_db.transaction() as session:
        stored = session.scalar(
            sa.text("SELECT string_agg(action || ' ' || details::text, ' ') FROM occ.audit_events")
        )
        work = session.scalar(
            sa.text("SELECT count(*) FROM occ.controller_work WHERE result_data::text LIKE :v"),
            {"v": f"%{VALUE}%"},
        )
    assert stored is not None and "secrets.create" in stored and "secrets.delete" in stored
    assert VALUE not in stored and json.dumps(VALUE) not in stored
    assert work == 0
    out, err = capfd.readouterr()
    assert "http.completed" in err  # the log lines were captured
    assert VALUE not in out and VALUE not in err
    assert all(VALUE not in record.getMessage() for record in caplog.records)


def test_the_openapi_secret_has_no_value(client: FlaskClient) -> None:
    spec = json_of(client.get("/v1/openapi.json"))
    schemas = spec["components"]["schemas"]
    assert "value" not in schemas["Secret"]["properties"]
    assert schemas["SecretCreate"]["properties"]["value"].get("writeOnly") is True
    assert set(spec["paths"]["/v1/namespaces/{namespace_id}/secrets"]) >= {"get", "post"}
    assert set(spec["paths"]["/v1/namespaces/{namespace_id}/secrets/{secret_id}"]) >= {
        "get",
        "delete",
    }
    assert "patch" not in spec["paths"]["/v1/namespaces/{namespace_id}/secrets/{secret_id}"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": "n", "value": ""}, "/value"),
        ({"name": "n", "value": "x" * (64 * 1024 + 1)}, "/value"),
        ({"name": "n", "value": "\u00e9" * (32 * 1024 + 1)}, "/value"),
        ({"name": "n", "value": 42}, "/value"),
        ({"name": "n", "value": None}, "/value"),
        ({"name": "n", "value": {"nested": VALUE}}, "/value"),
        ({"name": "n"}, "/value"),
        ({"value": VALUE}, "/name"),
        ({"name": " padded", "value": VALUE}, "/name"),
        ({"name": "n", "value": VALUE, "extra": 1}, "/extra"),
    ],
)
def test_create_rejects_bad_input_with_the_pointer(
    client: FlaskClient, db: Database, admin: Caller, ns: str, body: dict[str, Any], pointer: str
) -> None:
    response = client.post(base(ns), json=body, headers=admin.headers)
    problem(response, 400, "INVALID_REQUEST")
    assert pointer in [error["pointer"] for error in json_of(response)["errors"]]
    assert VALUE.encode() not in response.data
    with db.transaction() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(models.Secret)) == 0


def test_the_largest_value_is_accepted(client: FlaskClient, admin: Caller, ns: str) -> None:
    assert create(client, admin, ns, value="x" * (64 * 1024)).status_code == 201


def test_every_route_needs_a_valid_key(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    item = f"{base(ns)}/{json_of(create(client, admin, ns))['data']['id']}"
    revoked = support.revoked_caller(db, *ALL)
    requests = support.routes(base(ns), item, {"name": "x", "value": VALUE})
    for headers in ({}, revoked.headers):
        support.problems(client, requests, headers, 401, "UNAUTHENTICATED")
    assert json_of(client.get(base(ns), headers=admin.headers))["data"][0]["name"] == "token"


def test_another_namespaces_secrets_are_not_found(
    client: FlaskClient, db: Database, owner_db: Database, admin: Caller, ns: str
) -> None:
    near = support.neighbours(
        client, db, owner_db, admin, ns, create=create, collection=base, permissions=ALL
    )
    requests: list[support.Request] = [
        *near.reaching_theirs({"name": "intruder", "value": VALUE}),
        ("GET", f"{base(ns)}/not-an-id", None),
        ("GET", f"{base(ns)}/{ids.new('secret')}", None),
        ("GET", f"{base('ns_bad')}/{near.theirs['id']}", None),
    ]
    support.problems(client, requests, near.member.headers, 404, "NOT_FOUND")

    denied = near.kept_apart(client, db, admin)
    # denials on what the member cannot see are counted per kind and minute, not one by one
    assert denied and all("hiddenDenials" in event.details for event in denied)
    assert {event.actor_id for event in denied} == {near.member.principal_id}
    assert all(VALUE not in json.dumps(dict(event.details)) for event in denied)


def test_a_reader_is_forbidden_to_write(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    item = f"{base(ns)}/{json_of(create(client, admin, ns))['data']['id']}"
    reader = caller(db, "secret:read", "namespace:read", namespace_id=ns)
    assert client.get(item, headers=reader.headers).status_code == 200
    problem(client.delete(item, headers=reader.headers), 403, "FORBIDDEN")
    problem(create(client, reader, ns, name="new"), 403, "FORBIDDEN")


def test_duplicate_names_conflict(client: FlaskClient, admin: Caller, ns: str) -> None:
    create(client, admin, ns, name="taken")
    response = create(client, admin, ns, name="taken")
    problem(response, 409, "RESOURCE_CONFLICT")
    assert VALUE not in json_of(response)["detail"]


def test_a_secret_used_for_harness_auth_cannot_be_deleted(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    secret_id = json_of(create(client, admin, ns))["data"]["id"]
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=ns)
        session.execute(
            sa.update(models.Agent)
            .where(models.Agent.id == agent_id)
            .values(harness_auth_secret_id=secret_id)
        )
    support.kept_while_used(client, admin, f"{base(ns)}/{secret_id}", agent_id)


def test_a_namespace_that_is_not_ready_refuses_secrets(
    client: FlaskClient, owner_db: Database, admin: Caller
) -> None:
    support.refused_until_ready(client, owner_db, admin, lambda ns: create(client, admin, ns))
