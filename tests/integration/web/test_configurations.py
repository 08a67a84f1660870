"""``/v1/namespaces/{ns}/configurations`` over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.web import support
from tests.integration.web.conftest import Caller, namespace, testing_app
from tests.integration.web.support import caller, problem
from tests.support import rows
from tests.support.responses import json_of

ALL = ("configuration:create", "configuration:read", "configuration:update", "configuration:delete")


def base(namespace_id: str) -> str:
    return f"/v1/namespaces/{namespace_id}/configurations"


def create(
    client: FlaskClient, who: Caller, namespace_id: str, name: str = "base", document: Any = None
) -> Any:
    return client.post(
        base(namespace_id),
        headers=who.headers,
        json={"name": name, "document": document or {"model": "gpt"}},
    )


def test_create_read_list_update_delete(client: FlaskClient, admin: Caller, ns: str) -> None:
    created = create(client, admin, ns, document={"model": "gpt", "tools": ["search"]})
    assert created.status_code == 201, created.json
    data = json_of(created)["data"]
    assert set(data) == {
        "id",
        "namespaceId",
        "name",
        "document",
        "generation",
        "createdAt",
        "updatedAt",
    }
    assert (data["namespaceId"], data["name"], data["generation"]) == (ns, "base", 1)
    assert data["document"] == {"model": "gpt", "tools": ["search"]}
    assert json_of(created)["meta"]["requestId"] == created.headers["X-Request-Id"]
    item = f"{base(ns)}/{data['id']}"

    read = client.get(item, headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == data
    listed = client.get(base(ns), headers=admin.headers)
    assert listed.status_code == 200 and json_of(listed)["data"] == [data]

    renamed = client.patch(item, json={"name": "renamed"}, headers=admin.headers)
    assert renamed.status_code == 200, renamed.json
    assert (json_of(renamed)["data"]["name"], json_of(renamed)["data"]["generation"]) == (
        "renamed",
        2,
    )
    replaced = client.patch(item, json={"document": {"model": "other"}}, headers=admin.headers)
    assert json_of(replaced)["data"]["document"] == {"model": "other"}
    assert json_of(replaced)["data"]["generation"] == 3

    deleted = client.delete(item, headers=admin.headers)
    assert deleted.status_code == 204 and deleted.data == b""
    problem(client.get(item, headers=admin.headers), 404, "NOT_FOUND")
    assert json_of(client.get(base(ns), headers=admin.headers))["data"] == []


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": " padded", "document": {}}, "/name"),
        ({"name": "", "document": {}}, "/name"),
        ({"name": 5, "document": {}}, "/name"),
        ({"document": {}}, "/name"),
        ({"name": "n"}, "/document"),
        ({"name": "n", "document": [1]}, "/document"),
        ({"name": "n", "document": "text"}, "/document"),
        ({"name": "n", "document": None}, "/document"),
        ({"name": "n", "document": {"big": "x" * (64 * 1024)}}, "/document"),
        ({"name": "n", "document": {}, "colour": "red"}, "/colour"),
    ],
)
def test_create_rejects_bad_input_with_the_pointer(
    client: FlaskClient, admin: Caller, ns: str, body: dict[str, Any], pointer: str
) -> None:
    response = client.post(base(ns), json=body, headers=admin.headers)
    problem(response, 400, "INVALID_REQUEST")
    assert pointer in [error["pointer"] for error in json_of(response)["errors"]]
    assert json_of(client.get(base(ns), headers=admin.headers))["data"] == []


def test_create_rejects_non_finite_numbers(client: FlaskClient, admin: Caller, ns: str) -> None:
    response = client.post(
        base(ns),
        data='{"name": "n", "document": {"x": 1e999}}',
        content_type="application/json",
        headers=admin.headers,
    )
    problem(response, 400, "INVALID_REQUEST")
    # the body parser may refuse the literal itself (""); else the document check does
    assert json_of(response)["errors"][0]["pointer"] in {"", "/document"}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({}, ""),
        ({"name": None}, "/name"),
        ({"name": "bad\tname"}, "/name"),
        ({"document": []}, "/document"),
        ({"generation": 7}, "/generation"),
    ],
)
def test_update_rejects_bad_input_with_the_pointer(
    client: FlaskClient, admin: Caller, ns: str, body: dict[str, Any], pointer: str
) -> None:
    item = f"{base(ns)}/{json_of(create(client, admin, ns))['data']['id']}"
    response = client.patch(item, json=body, headers=admin.headers)
    problem(response, 400, "INVALID_REQUEST")
    assert pointer in [error["pointer"] for error in json_of(response)["errors"]]
    assert json_of(client.get(item, headers=admin.headers))["data"]["generation"] == 1


def test_every_route_needs_a_valid_key(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    item = f"{base(ns)}/{json_of(create(client, admin, ns))['data']['id']}"
    revoked = support.revoked_caller(db, *ALL)
    requests = support.routes(base(ns), item, {"name": "x", "document": {}}, {"name": "y"})
    for headers in ({}, revoked.headers, {"Authorization": "Bearer occ_nonsense"}):
        support.problems(client, requests, headers, 401, "UNAUTHENTICATED")
    assert json_of(client.get(item, headers=admin.headers))["data"]["generation"] == 1


def test_another_namespaces_configurations_are_not_found(
    client: FlaskClient, db: Database, owner_db: Database, admin: Caller, ns: str
) -> None:
    near = support.neighbours(
        client, db, owner_db, admin, ns, create=create, collection=base, permissions=ALL
    )
    requests = near.reaching_theirs({"name": "intruder", "document": {}}, {"name": "mine"})
    support.problems(client, requests, near.member.headers, 404, "NOT_FOUND")

    denied = near.kept_apart(client, db, admin)
    # denials on what the member cannot see are counted per kind and minute, not one by one
    assert denied and all("hiddenDenials" in event.details for event in denied)
    assert {event.actor_id for event in denied} == {near.member.principal_id}
    assert {event.namespace_id for event in denied} == {near.other}
    assert sum(int(event.details["hiddenDenials"]) for event in denied) >= 1


def test_malformed_and_unknown_ids_are_not_found(
    client: FlaskClient, admin: Caller, ns: str
) -> None:
    for path in [
        f"{base(ns)}/nope",
        f"{base(ns)}/{ids.new('configuration')}",
        f"{base(ns)}/{ids.new('secret')}",
        f"{base('ns_bad')}/{ids.new('configuration')}",
        f"{base(ids.new('namespace'))}/{ids.new('configuration')}",
    ]:
        problem(client.get(path, headers=admin.headers), 404, "NOT_FOUND")
        problem(client.patch(path, json={"name": "n"}, headers=admin.headers), 404, "NOT_FOUND")
        problem(client.delete(path, headers=admin.headers), 404, "NOT_FOUND")
    for namespace_path in (base("ns_bad"), base(ids.new("namespace"))):
        problem(client.get(namespace_path, headers=admin.headers), 404, "NOT_FOUND")
        problem(create(client, admin, namespace_path.split("/")[3]), 404, "NOT_FOUND")


def test_a_reader_is_forbidden_to_write(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    item = f"{base(ns)}/{json_of(create(client, admin, ns))['data']['id']}"
    reader = caller(db, "configuration:read", "namespace:read", namespace_id=ns)
    assert client.get(item, headers=reader.headers).status_code == 200
    problem(client.patch(item, json={"name": "x"}, headers=reader.headers), 403, "FORBIDDEN")
    problem(client.delete(item, headers=reader.headers), 403, "FORBIDDEN")
    problem(create(client, reader, ns, name="new"), 403, "FORBIDDEN")


def test_duplicate_names_conflict(client: FlaskClient, admin: Caller, ns: str) -> None:
    create(client, admin, ns, name="taken")
    problem(create(client, admin, ns, name="taken"), 409, "RESOURCE_CONFLICT")
    mine = json_of(create(client, admin, ns, name="mine"))["data"]
    item = f"{base(ns)}/{mine['id']}"
    problem(
        client.patch(item, json={"name": "taken"}, headers=admin.headers), 409, "RESOURCE_CONFLICT"
    )
    assert json_of(client.get(item, headers=admin.headers))["data"] == mine


def test_a_configuration_used_by_an_agent_cannot_be_deleted(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=ns)
        configuration_id = session.scalar(
            sa.select(models.Agent.configuration_id).where(models.Agent.id == agent_id)
        )
    support.kept_while_used(client, admin, f"{base(ns)}/{configuration_id}", agent_id)


def test_a_namespace_that_is_not_ready_refuses_configurations(
    client: FlaskClient, owner_db: Database, admin: Caller
) -> None:
    young = support.refused_until_ready(
        client, owner_db, admin, lambda ns: create(client, admin, ns)
    )
    assert json_of(client.get(base(young), headers=admin.headers))["data"] == []


def test_openapi_documents_the_routes(client: FlaskClient) -> None:
    spec = json_of(client.get("/v1/openapi.json"))
    paths = spec["paths"]
    assert set(paths["/v1/namespaces/{namespace_id}/configurations"]) >= {"get", "post"}
    assert set(paths["/v1/namespaces/{namespace_id}/configurations/{configuration_id}"]) >= {
        "get",
        "patch",
        "delete",
    }


@pytest.fixture
def filesystem_client(
    db: Database, settings: Settings, tmp_path: Path
) -> Iterator[tuple[FlaskClient, Path]]:
    """The API with the filesystem Configuration Driver under a fresh root."""
    root = tmp_path / "configurations"
    chosen = {"configuration_driver": "filesystem", "development_configuration_root": str(root)}
    with testing_app(settings.replace(**chosen)) as app:
        yield app.test_client(), root


def test_the_filesystem_driver_keeps_each_generation_in_a_file_the_api_writes(
    filesystem_client: tuple[FlaskClient, Path], db: Database, owner_db: Database, admin: Caller
) -> None:
    client, root = filesystem_client
    ns = namespace(client, owner_db, admin, "team-fs")
    created = create(client, admin, ns, document={"model": "gpt", "n": 1})
    assert created.status_code == 201, created.json
    configuration_id = json_of(created)["data"]["id"]
    assert json_of(created)["data"]["document"] == {"model": "gpt", "n": 1}
    directory = root / ns / configuration_id
    [first] = directory.glob("*.json")
    assert json.loads(first.read_text()) == {"model": "gpt", "n": 1}
    assert first.stat().st_mode & 0o777 == 0o600
    with db.transaction() as session:
        row = session.execute(
            sa.select(models.Configuration.document).where(
                models.Configuration.id == configuration_id
            )
        ).scalar_one()
    assert row == {"$occConfiguration": {"driver": "filesystem", "file": first.name}}

    patched = client.patch(
        f"{base(ns)}/{configuration_id}",
        headers=admin.headers,
        json={"document": {"model": "gpt", "n": 2}},
    )
    assert patched.status_code == 200, patched.json
    assert len(list(directory.glob("*.json"))) == 2
    read = client.get(f"{base(ns)}/{configuration_id}", headers=admin.headers)
    assert json_of(read)["data"]["document"] == {"model": "gpt", "n": 2}
    assert json_of(read)["data"]["generation"] == 2
    listed = client.get(base(ns), headers=admin.headers)
    assert [item["document"] for item in json_of(listed)["data"]] == [{"model": "gpt", "n": 2}]

    deleted = client.delete(f"{base(ns)}/{configuration_id}", headers=admin.headers)
    assert deleted.status_code == 204
    assert not directory.exists()


def test_an_unwritable_root_answers_503(
    filesystem_client: tuple[FlaskClient, Path], owner_db: Database, admin: Caller
) -> None:
    client, root = filesystem_client
    ns = namespace(client, owner_db, admin, "team-ro")
    root.parent.mkdir(parents=True, exist_ok=True)
    root.write_text("a file where the root should be")
    created = create(client, admin, ns)
    assert created.status_code == 503, created.json
    assert "OCC_DEVELOPMENT_CONFIGURATION_ROOT" in json_of(created)["detail"]
    assert json_of(client.get(base(ns), headers=admin.headers))["data"] == []  # nothing committed
