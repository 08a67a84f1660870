"""Every resource list pages by cursor: ``limit``, ``cursor``, ``meta.nextCursor``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.controller import configurations, listing
from occ.state import api_keys
from occ.state import configurations as configuration_rows
from occ.state.db import Database
from tests.integration.state import test_keyset
from tests.integration.web import test_agents
from tests.integration.web.conftest import PEPPER, Caller
from tests.integration.web.support import walk
from tests.support import grants, rows
from tests.support.responses import json_of


def test_namespaces_page_in_order_and_end(client: FlaskClient, admin: Caller) -> None:
    for index in range(5):
        assert (
            client.post(
                "/v1/namespaces", json={"name": f"ns-{index}"}, headers=admin.headers
            ).status_code
            == 201
        )
    everything = json_of(client.get("/v1/namespaces", headers=admin.headers))
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
    first = json_of(client.get(path, query_string={"limit": 2}, headers=admin.headers))
    last_shown = first["data"][-1]["id"]
    assert client.delete(f"{path}/{last_shown}", headers=admin.headers).status_code == 204
    rest = json_of(
        client.get(
            path,
            query_string={"limit": 2, "cursor": first["meta"]["nextCursor"]},
            headers=admin.headers,
        )
    )
    all_ids = [c["id"] for c in json_of(client.get(path, headers=admin.headers))["data"]]
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
        ({"limit": "0"}, "/query/limit"),
        ({"limit": "501"}, "/query/limit"),
        ({"cursor": "not-a-cursor"}, "/query/cursor"),
        ({"cursor": "WyJ4Il0"}, "/query/cursor"),  # base64url of ["x"]: not this list's key
        ({"cursor": "WzEwMDAwMDAwMDAwMDAwMDAwMDAwMCwieCJd"}, "/query/cursor"),  # [1e20, "x"]
    ):
        refused = client.get(path, query_string=query, headers=admin.headers)
        assert refused.status_code == 400, (path, query, refused.json)
        assert pointer in [e["pointer"] for e in json_of(refused)["errors"]], refused.json
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


def test_a_cursor_is_refused_by_any_list_but_its_own(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    first = test_agents.make_world(db, admin.principal_id)
    second = test_agents.make_world(db, admin.principal_id)
    for world in (first, second):
        add_configurations(db, world.namespace_id, 2)
    own = f"/v1/namespaces/{first.namespace_id}/configurations"
    shown = json_of(client.get(own, query_string={"limit": 1}, headers=admin.headers))
    cursor = shown["meta"]["nextCursor"]
    assert cursor is not None

    for elsewhere, filters in (
        (f"/v1/namespaces/{second.namespace_id}/configurations", {}),  # the same shape of list
        (f"/v1/namespaces/{first.namespace_id}/secrets", {}),
        ("/v1/namespaces", {}),
        (own, {"name": "c0"}),  # its own list under another filter
    ):
        query = {"limit": 1, "cursor": cursor, **filters}
        refused = client.get(elsewhere, query_string=query, headers=admin.headers)
        assert refused.status_code == 400, (elsewhere, refused.json)
        assert [e["pointer"] for e in json_of(refused)["errors"]] == ["/query/cursor"]
    again = client.get(own, query_string={"limit": 1, "cursor": cursor}, headers=admin.headers)
    assert again.status_code == 200 and json_of(again)["data"] != shown["data"]


def add_configurations(db: Database, namespace_id: str, count: int, prefix: str = "c") -> list[str]:
    with db.transaction() as session:
        return [
            configuration_rows.insert(
                session, namespace_id=namespace_id, name=f"{prefix}{index}", document={}
            ).id
            for index in range(count)
        ]


def test_a_walk_sees_every_item_once_across_inserts_and_deletes(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    ids = [world.configuration_id, *add_configurations(db, world.namespace_id, 7)]

    first = json_of(client.get(path, query_string={"limit": 3}, headers=admin.headers))
    assert [c["id"] for c in first["data"]] == ids[:3]
    for gone in (ids[1], ids[4]):  # one already shown, one not yet
        assert client.delete(f"{path}/{gone}", headers=admin.headers).status_code == 204
    [late] = add_configurations(db, world.namespace_id, 1, prefix="late")

    second = json_of(
        client.get(
            path,
            query_string={"limit": 3, "cursor": first["meta"]["nextCursor"]},
            headers=admin.headers,
        )
    )
    assert [c["id"] for c in second["data"]] == [ids[3], ids[5], ids[6]]
    third = json_of(
        client.get(
            path,
            query_string={"limit": 3, "cursor": second["meta"]["nextCursor"]},
            headers=admin.headers,
        )
    )
    assert [c["id"] for c in third["data"]] == [ids[7], late]
    assert third["meta"]["nextCursor"] is None


def test_a_filtered_list_fills_its_pages_across_windows(
    client: FlaskClient, admin: Caller, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "FILTERED_BATCH", 1)  # windows of limit + 1 rows
    world = test_agents.make_world(db, admin.principal_id)
    ids = add_configurations(db, world.namespace_id, 10)
    readable = [ids[1], ids[4], ids[5], ids[8]]
    with db.transaction() as session:
        principal_id = rows.principal(session)
        for configuration_id in readable:
            only_it = grants.exactly(world.namespace_id, "configuration", configuration_id)
            grants.grant(session, principal_id, ["configuration:read"], **only_it)
        reader = Caller(
            principal_id, api_keys.mint(session, principal_id=principal_id, pepper=PEPPER).plaintext
        )
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    assert walk(client, path, reader, 2) == [readable[:2], readable[2:]]
    assert walk(client, path, reader, 3) == [readable[:3], readable[3:]]


def test_a_long_list_answers_its_first_page_from_a_limited_read(
    client: FlaskClient, admin: Caller, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    test_keyset.many_configurations(db, world.namespace_id, 5_000)
    read: list[int] = []
    original = configuration_rows.list_in

    def counted(*args: Any, **kwargs: Any) -> list[configuration_rows.Configuration]:
        answered = original(*args, **kwargs)
        read.append(len(answered))
        return answered

    # the use cases read through their Items value, which holds the repository function
    counting = dataclasses.replace(configurations.ITEMS, list_in=counted)
    monkeypatch.setattr(configurations, "ITEMS", counting)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    page = client.get(path, query_string={"limit": 20}, headers=admin.headers)
    assert page.status_code == 200, page.json
    assert len(json_of(page)["data"]) == 20 and json_of(page)["meta"]["nextCursor"] is not None
    # the administrator reads everything: one window, at most the filtered batch
    assert len(read) == 1 and read[0] <= listing.FILTERED_BATCH


def test_the_named_lists_filter_by_exact_name(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world, name="helper")
    add_configurations(db, world.namespace_id, 3, prefix="helper")  # helper0..2: not "helper"
    namespace = json_of(client.get(f"/v1/namespaces/{world.namespace_id}", headers=admin.headers))
    in_namespace = f"/v1/namespaces/{world.namespace_id}"
    for path, name, expected in (
        ("/v1/namespaces", namespace["data"]["name"], [world.namespace_id]),
        (f"{in_namespace}/configurations", "config", [world.configuration_id]),
        (f"{in_namespace}/configurations", "helper1", None),
        (f"{in_namespace}/secrets", "token", [world.secret_id]),
        (world.agents, "helper", [agent["id"]]),
        (world.agents, "help", []),
        (world.agents, "HELPER", []),
    ):
        answered = client.get(path, query_string={"name": name}, headers=admin.headers)
        assert answered.status_code == 200, answered.json
        names = [item["name"] for item in json_of(answered)["data"]]
        assert names == ([] if expected == [] else [name]), (path, name, names)
        if expected:
            assert [item["id"] for item in json_of(answered)["data"]] == expected
        assert json_of(answered)["meta"]["nextCursor"] is None


def test_a_name_filter_keeps_to_what_the_caller_may_read(
    client: FlaskClient, admin: Caller, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "FILTERED_BATCH", 1)  # the filter goes on across windows
    world = test_agents.make_world(db, admin.principal_id)
    ids = add_configurations(db, world.namespace_id, 4)
    with db.transaction() as session:
        principal_id = rows.principal(session)
        only_it = grants.exactly(world.namespace_id, "configuration", ids[2])
        grants.grant(session, principal_id, ["configuration:read"], **only_it)
        reader = Caller(
            principal_id, api_keys.mint(session, principal_id=principal_id, pepper=PEPPER).plaintext
        )
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    answered = client.get(path, query_string={"name": "c2"}, headers=reader.headers)
    assert answered.status_code == 200, answered.json
    assert [item["id"] for item in json_of(answered)["data"]] == [ids[2]]
    # an empty page answers as the Namespace does for this caller, who may not read it
    hidden = client.get(path, query_string={"name": "c1"}, headers=reader.headers)
    assert hidden.status_code == 404, hidden.json
    assert json_of(client.get(path, query_string={"name": "c1"}, headers=admin.headers))["data"]


def test_a_bad_name_filter_is_refused_and_other_lists_have_none(
    client: FlaskClient, admin: Caller
) -> None:
    for bad in ("", "a\x00b", "tab\there"):
        refused = client.get("/v1/namespaces", query_string={"name": bad}, headers=admin.headers)
        assert refused.status_code == 400, refused.json
        assert [e["pointer"] for e in json_of(refused)["errors"]] == ["/query/name"]
    unknown = client.get("/v1/roles", query_string={"name": "admin"}, headers=admin.headers)
    assert unknown.status_code == 400, unknown.json
    assert [e["pointer"] for e in json_of(unknown)["errors"]] == ["/query/name"]
