"""A caller who may not see the path's Namespace gets 404 whatever the body says."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.state import models
from occ.state.db import Database
from tests.integration.web import support, test_agents
from tests.integration.web.conftest import Caller
from tests.support.responses import json_of

BAD_BODIES: list[dict[str, Any]] = [
    {"data": b"{not json", "content_type": "application/json"},
    {"data": b"{}", "content_type": "text/plain"},
    {"json": {"unexpected": True}},
    {"json": []},
]


@pytest.mark.parametrize("bad", BAD_BODIES)
def test_an_unseen_namespace_is_not_found_before_the_body_is_read(
    client: FlaskClient, admin: Caller, db: Database, bad: dict[str, Any]
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    outsider = support.caller(db, "agent:read")  # nothing on this Namespace
    missing = f"/v1/namespaces/{ids.new('namespace')}/agents"
    for path in (
        world.agents,
        f"/v1/namespaces/{world.namespace_id}/configurations",
        f"/v1/namespaces/{world.namespace_id}/secrets",
        missing,
    ):
        hidden = client.post(path, headers=outsider.headers, **bad)
        assert hidden.status_code == 404, (path, hidden.json)
        assert json_of(hidden)["code"] == "NOT_FOUND"
        seen = client.post(path, headers=admin.headers, **bad)
        expected = (
            404 if path == missing else 415 if bad.get("content_type") == "text/plain" else 400
        )
        assert seen.status_code == expected, (path, seen.json)
    assert test_agents.count(db, models.Agent) == 0


def test_a_visible_namespace_still_gets_the_body_errors(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    creator = support.caller(db, "agent:create", namespace_id=world.namespace_id)
    invalid = client.post(world.agents, json={"name": 7}, headers=creator.headers)
    assert invalid.status_code == 400, invalid.json
    assert "/name" in {e["pointer"] for e in json_of(invalid)["errors"]}
    reader = support.caller(db, "namespace:read", namespace_id=world.namespace_id)
    denied = client.post(world.agents, json={"name": 7}, headers=reader.headers)
    assert denied.status_code == 400, denied.json  # it sees the Namespace: the body comes first


def test_an_unseen_agent_patch_is_not_found(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    elsewhere = test_agents.make_world(db, admin.principal_id).namespace_id
    outsider = support.caller(db, "agent:update", namespace_id=elsewhere)
    patched = client.patch(
        f"{world.agents}/{agent['id']}", json={"bogus": 1}, headers=outsider.headers
    )
    assert patched.status_code == 404, patched.json
