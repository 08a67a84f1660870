"""Every resource list pages by cursor: ``limit``, ``cursor``, ``meta.nextCursor``."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.db import Database
from tests.integration.web import test_agents
from tests.integration.web.conftest import Caller


def walk(
    client: FlaskClient, path: str, caller: Caller, limit: int, field: str = "id"
) -> list[list[Any]]:
    """``field`` of every item of every page, following ``meta.nextCursor`` to the end."""
    pages: list[list[Any]] = []
    cursor: str | None = None
    while True:
        query: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        response = client.get(path, query_string=query, headers=caller.headers)
        assert response.status_code == 200, response.json
        assert len(response.json["data"]) <= limit
        pages.append([item[field] for item in response.json["data"]])
        cursor = response.json["meta"]["nextCursor"]
        if cursor is None:
            return pages


def test_namespaces_page_in_order_and_end(client: FlaskClient, admin: Caller) -> None:
    for index in range(5):
        assert (
            client.post(
                "/v1/namespaces", json={"name": f"ns-{index}"}, headers=admin.headers
            ).status_code
            == 201
        )
    everything = client.get("/v1/namespaces", headers=admin.headers).json
    assert everything["meta"]["nextCursor"] is None
    ids = [item["id"] for item in everything["data"]]
    pages = walk(client, "/v1/namespaces", admin, 2)
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [i for page in pages for i in page] == ids


def test_a_page_after_a_deleted_item_starts_in_the_right_place(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    for index in range(3):
        created = client.post(
            path, json={"name": f"c{index}", "document": {}}, headers=admin.headers
        )
        assert created.status_code == 201, created.json
    first = client.get(path, query_string={"limit": 2}, headers=admin.headers).json
    last_shown = first["data"][-1]["id"]
    assert client.delete(f"{path}/{last_shown}", headers=admin.headers).status_code == 204
    rest = client.get(
        path,
        query_string={"limit": 2, "cursor": first["meta"]["nextCursor"]},
        headers=admin.headers,
    ).json
    all_ids = [c["id"] for c in client.get(path, headers=admin.headers).json["data"]]
    assert [c["id"] for c in rest["data"]] == all_ids[all_ids.index(first["data"][0]["id"]) + 1 :]


def test_revisions_page_newest_first(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    test_agents.empower(db, agent)
    for _ in range(3):
        deployed = client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers)
        assert deployed.status_code == 202, deployed.json
    pages = walk(client, f"{world.agents}/{agent['id']}/revisions", admin, 2, "revisionNumber")
    assert pages == [[3, 2], [1]]


@pytest.mark.parametrize(
    "path",
    ["/v1/namespaces", "/v1/roles", "/v1/principals", "/v1/access-bindings", "/v1/restrictions"],
)
def test_every_list_refuses_a_bad_page(client: FlaskClient, admin: Caller, path: str) -> None:
    for query, pointer in (
        ({"limit": "0"}, "/limit"),
        ({"limit": "501"}, "/limit"),
        ({"cursor": "not-a-cursor"}, "/query/cursor"),
        ({"cursor": "WyJ4Il0"}, "/query/cursor"),  # base64url of ["x"]: not this list's key
    ):
        refused = client.get(path, query_string=query, headers=admin.headers)
        assert refused.status_code == 400, (path, query, refused.json)
        assert pointer in [e["pointer"] for e in refused.json["errors"]], refused.json
    assert client.get(path, query_string={"limit": 1}, headers=admin.headers).status_code == 200


def test_namespace_lists_and_api_keys_page_too(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    for path, expected in (
        (world.agents, [agent["id"]]),
        (f"/v1/namespaces/{world.namespace_id}/configurations", [world.configuration_id]),
        (f"/v1/namespaces/{world.namespace_id}/secrets", [world.secret_id]),
    ):
        assert walk(client, path, admin, 1) == [expected], path
    client.post(f"/v1/principals/{admin.principal_id}/api-keys", headers=admin.headers)
    keys = walk(client, f"/v1/principals/{admin.principal_id}/api-keys", admin, 1)
    assert [len(page) for page in keys] == [1, 1]
