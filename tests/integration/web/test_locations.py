"""``Location`` on every 201 and 202 points at a URL that answers the resource."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from occ.state.db import Database
from tests.integration.web import test_agents
from tests.integration.web.conftest import Caller
from tests.support.responses import json_of


def follow(client: FlaskClient, response: Any, admin: Caller) -> Any:
    location = response.headers["Location"]
    assert location.startswith("/v1/"), location
    followed = client.get(location, headers=admin.headers)
    assert followed.status_code == 200, (location, followed.json)
    return json_of(followed)["data"]


def test_created_resources_are_located(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    created: list[tuple[str, dict[str, Any]]] = [
        ("/v1/namespaces", {"name": "located"}),
        (
            f"/v1/namespaces/{world.namespace_id}/configurations",
            {"name": "c2", "document": {"a": 1}},
        ),
        (f"/v1/namespaces/{world.namespace_id}/secrets", {"name": "s2", "value": "v"}),
        (world.agents, test_agents.body(world)),
        ("/v1/principals", {"name": "robot", "kind": "service"}),
        ("/v1/roles", {"name": "reader", "permissions": ["agent:read"]}),
        ("/v1/restrictions", {"permission": "agent:deploy"}),
    ]
    for path, body in created:
        response = client.post(path, json=body, headers=admin.headers)
        assert response.status_code == 201, (path, response.json)
        assert follow(client, response, admin)["id"] == json_of(response)["data"]["id"], path


def test_accepted_work_is_located(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    test_agents.empower(db, agent)
    agent_url = f"{world.agents}/{agent['id']}"

    deployed = client.post(f"{agent_url}/deploy", headers=admin.headers)
    assert deployed.status_code == 202, deployed.json
    deployment = follow(client, deployed, admin)
    assert deployment["deploymentId"] == json_of(deployed)["data"]["deploymentId"]
    assert deployed.headers["Location"] == f"{agent_url}/deployments/{deployment['deploymentId']}"

    stopped = client.post(f"{agent_url}/stop", headers=admin.headers)
    assert stopped.status_code == 202 and stopped.headers["Location"] == agent_url
    deleted = client.delete(agent_url, headers=admin.headers)
    assert deleted.status_code == 202 and deleted.headers["Location"] == agent_url


def test_a_new_api_key_is_located_where_it_is_revoked(client: FlaskClient, admin: Caller) -> None:
    minted = client.post(f"/v1/principals/{admin.principal_id}/api-keys", headers=admin.headers)
    assert minted.status_code == 201, minted.json
    location = minted.headers["Location"]
    assert (
        location == f"/v1/principals/{admin.principal_id}/api-keys/{json_of(minted)['data']['id']}"
    )
    assert client.delete(location, headers=admin.headers).status_code == 200
