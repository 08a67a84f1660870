"""Namespace quotas over HTTP: the defaults as settings, an administrator's overrides through
``/v1/namespaces/{id}/quotas``, and a create or deploy past a quota answered 409
``QUOTA_EXCEEDED`` naming the quota, its limit and usage, having written nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.controller.support import count
from tests.integration.web import support
from tests.integration.web.conftest import Caller, testing_app
from tests.integration.web.test_agents import World, body, deployable, make_world
from tests.support.responses import json_of


@pytest.fixture
def client(db: Database, settings: Settings) -> Iterator[FlaskClient]:
    """An API whose defaults are small: 2 Agents, 3 revisions each, 2 Secrets, 3
    Configurations a Namespace."""
    small = settings.replace(
        quota_agents=2, quota_revisions_per_agent=3, quota_secrets=2, quota_configurations=3
    )
    with testing_app(small) as app:
        yield app.test_client()


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)  # one Configuration and one Secret


def _quotas(world: World) -> str:
    return f"/v1/namespaces/{world.namespace_id}/quotas"


def _set(client: FlaskClient, admin: Caller, world: World, **limits: Any) -> dict[str, Any]:
    response = client.patch(_quotas(world), json=limits, headers=admin.headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    data: dict[str, Any] = json_of(response)["data"]
    return data


def _exceeded(response: Any, name: str, limit: int, used: int) -> None:
    refused = support.problem(response, 409, "QUOTA_EXCEEDED")
    assert refused["quota"] == {"name": name, "limit": limit, "used": used}


def test_the_defaults_apply_until_an_administrator_overrides_them(
    client: FlaskClient, admin: Caller, world: World
) -> None:
    read = client.get(_quotas(world), headers=admin.headers)
    assert json_of(read)["data"] == {
        "namespaceId": world.namespace_id,
        "agents": {"limit": 2, "used": 0, "overridden": False},
        "revisionsPerAgent": {"limit": 3, "used": 0, "overridden": False},
        "secrets": {"limit": 2, "used": 1, "overridden": False},
        "configurations": {"limit": 3, "used": 1, "overridden": False},
    }
    assert _set(client, admin, world, agents=1, secrets=5)["agents"] == {
        "limit": 1,
        "used": 0,
        "overridden": True,
    }
    created = client.post(world.agents, json=body(world), headers=admin.headers)
    assert created.status_code == 201
    second = client.post(world.agents, json=body(world, name="second"), headers=admin.headers)
    _exceeded(second, "agents", 1, 1)
    assert count_agents(client, admin, world) == 1
    # the override of Secrets lifts their default of 2
    for name in ("two", "three"):
        made = client.post(
            f"/v1/namespaces/{world.namespace_id}/secrets",
            json={"name": name, "value": "v"},
            headers=admin.headers,
        )
        assert made.status_code == 201
    # null returns a quota to its default; the other overrides stay
    after = _set(client, admin, world, secrets=None)
    assert after["secrets"] == {"limit": 2, "used": 3, "overridden": False}
    assert after["agents"]["overridden"] is True


def count_agents(client: FlaskClient, admin: Caller, world: World) -> int:
    listed = client.get(world.agents, headers=admin.headers)
    return len(json_of(listed)["data"])


def test_creates_past_a_default_quota_answer_409_and_write_nothing(
    client: FlaskClient, db: Database, admin: Caller, world: World
) -> None:
    secrets = f"/v1/namespaces/{world.namespace_id}/secrets"
    made = client.post(secrets, json={"name": "two", "value": "v"}, headers=admin.headers)
    assert made.status_code == 201
    past = client.post(secrets, json={"name": "three", "value": "s3cr3t"}, headers=admin.headers)
    _exceeded(past, "secrets", 2, 2)
    assert "s3cr3t" not in past.get_data(as_text=True)
    configurations = f"/v1/namespaces/{world.namespace_id}/configurations"
    for name in ("two", "three"):
        made = client.post(
            configurations, json={"name": name, "document": {}}, headers=admin.headers
        )
        assert made.status_code == 201
    past = client.post(configurations, json={"name": "four", "document": {}}, headers=admin.headers)
    _exceeded(past, "configurations", 3, 3)
    assert count(db, models.Secret) == 2
    assert count(db, models.Configuration) == 3


def test_deploys_past_the_revision_quota_answer_409_and_write_no_revision(
    client: FlaskClient, db: Database, admin: Caller, world: World
) -> None:
    _set(client, admin, world, revisionsPerAgent=2)
    _, base = deployable(client, db, admin, world)
    for _ in range(2):
        assert client.post(f"{base}/deploy", headers=admin.headers).status_code == 202
    _exceeded(client.post(f"{base}/deploy", headers=admin.headers), "revisionsPerAgent", 2, 2)
    assert count(db, models.AgentRevision) == 2
    quotas = json_of(client.get(_quotas(world), headers=admin.headers))["data"]
    assert quotas["revisionsPerAgent"] == {"limit": 2, "used": 2, "overridden": True}
    _set(client, admin, world, revisionsPerAgent=3)  # raised: the Agent deploys again
    assert client.post(f"{base}/deploy", headers=admin.headers).status_code == 202


def test_only_an_administrator_sets_quotas(
    client: FlaskClient, db: Database, admin: Caller, world: World
) -> None:
    reader = support.caller(db, "namespace:read", namespace_id=world.namespace_id)
    assert client.get(_quotas(world), headers=reader.headers).status_code == 200
    refused = client.patch(_quotas(world), json={"agents": 50}, headers=reader.headers)
    support.problem(refused, 403, "FORBIDDEN")
    outsider = support.caller(db, name="outsider")
    for method in (client.get, client.patch):
        support.problem(method(_quotas(world), json={}, headers=outsider.headers), 404, "NOT_FOUND")
    assert json_of(client.get(_quotas(world), headers=admin.headers))["data"]["agents"] == {
        "limit": 2,
        "used": 0,
        "overridden": False,
    }


@pytest.mark.parametrize(
    ("limits", "pointer"),
    [
        ({"agents": -1}, "/agents"),
        ({"revisionsPerAgent": 1_000_001}, "/revisionsPerAgent"),
        ({"secrets": "many"}, "/secrets"),
        ({"agents": 1.5}, "/agents"),  # not rounded down
        ({"agents": "5"}, "/agents"),  # not parsed from text
        ({"widgets": 1}, "/widgets"),
    ],
)
def test_a_bad_limit_is_refused_naming_it(
    client: FlaskClient, admin: Caller, world: World, limits: dict[str, Any], pointer: str
) -> None:
    refused = support.problem(
        client.patch(_quotas(world), json=limits, headers=admin.headers), 400, "INVALID_REQUEST"
    )
    assert [error["pointer"] for error in refused["errors"]] == [pointer]
    read = json_of(client.get(_quotas(world), headers=admin.headers))["data"]
    assert not any(read[name]["overridden"] for name in ("agents", "secrets"))
