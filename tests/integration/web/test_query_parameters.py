"""Every route refuses query parameters it does not document, with a ``/query/...`` pointer."""

from __future__ import annotations

import flask
import pytest
from flask.testing import FlaskClient

from occ.state.db import Database
from occ.web import access
from tests.integration.web import test_agents
from tests.integration.web.conftest import Caller
from tests.support.responses import json_of


def assert_refused(response: object, *names: str) -> None:
    assert isinstance(response, flask.Response)
    assert response.status_code == 400, response.json
    assert response.content_type == "application/problem+json"
    assert json_of(response)["code"] == "INVALID_REQUEST"
    assert [e["pointer"] for e in json_of(response)["errors"]] == [f"/query/{n}" for n in names]


@pytest.mark.parametrize(
    "path", ["/v1/namespaces", "/v1/roles", "/v1/principals", "/v1/installation", "/v1/work"]
)
def test_an_unknown_parameter_is_refused(client: FlaskClient, admin: Caller, path: str) -> None:
    assert_refused(client.get(f"{path}?foo=1&a/b=2", headers=admin.headers), "a~1b", "foo")
    assert client.get(path, headers=admin.headers).status_code == 200


def test_documented_parameters_still_work(client: FlaskClient, admin: Caller) -> None:
    listed = client.get("/v1/work?limit=5&state=queued", headers=admin.headers)
    assert listed.status_code == 200, listed.json
    assert_refused(client.get("/v1/work?limit=5&stat=queued", headers=admin.headers), "stat")


def test_a_write_with_an_unknown_parameter_changes_nothing(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    refused = client.post(
        f"{world.agents}?dryRun=true", json=test_agents.body(world), headers=admin.headers
    )
    assert_refused(refused, "dryRun")
    assert json_of(client.get(world.agents, headers=admin.headers))["data"] == []


def test_every_route_is_covered(app: flask.Flask, client: FlaskClient, admin: Caller) -> None:
    """The check runs before the view for every rule, public ones included."""
    assert_refused(client.get("/healthz?verbose=1"), "verbose")
    assert access.declared(app.view_functions["health.healthz"]) == access.PUBLIC
    unauthenticated = client.get("/v1/namespaces?foo=1")
    assert unauthenticated.status_code == 401  # who asks comes first
