"""``POST /v1/authorization-checks``: the decision ``occ.iam`` takes, for the caller or (for an
administrator) another principal; hidden and missing resources; bad input."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.support import caller
from tests.integration.web.test_agents import World, make_world
from tests.support.responses import json_of

ROUTE = "/v1/authorization-checks"


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


@pytest.fixture
def tenant(db: Database, world: World) -> Caller:
    """May read the Namespace and its Configuration, nothing else."""
    return caller(
        db, "namespace:read", "configuration:read", namespace_id=world.namespace_id, name="tenant"
    )


def _check(
    client: FlaskClient, who: Caller, permission: str, resource: dict[str, str], **scope: str
) -> Any:
    """Ask whether ``permission`` on ``resource`` is allowed (``scope``: namespaceId,
    principalId)."""
    body = {"permission": permission, "resource": resource, **scope}
    return client.post(ROUTE, json=body, headers=who.headers)


def test_the_caller_gets_the_decision_for_itself(
    client: FlaskClient, tenant: Caller, world: World
) -> None:
    configuration = {"kind": "configuration", "id": world.configuration_id}
    allowed = _check(
        client, tenant, "configuration:read", configuration, namespaceId=world.namespace_id
    )
    assert allowed.status_code == 200, allowed.json
    assert json_of(allowed)["data"] == {
        "principalId": tenant.principal_id,
        "permission": "configuration:read",
        "resource": configuration,
        "namespaceId": world.namespace_id,
        "allowed": True,
        "reason": "allowed",
    }
    denied = _check(
        client, tenant, "configuration:update", configuration, namespaceId=world.namespace_id
    )
    assert denied.status_code == 200
    assert (json_of(denied)["data"]["allowed"], json_of(denied)["data"]["reason"]) == (
        False,
        "no_matching_binding",
    )
    # and the API itself agrees: the update is refused, the read answered
    path = f"/v1/namespaces/{world.namespace_id}/configurations/{world.configuration_id}"
    assert client.get(path, headers=tenant.headers).status_code == 200
    assert client.patch(path, json={"name": "x"}, headers=tenant.headers).status_code == 403


def test_a_resource_the_caller_may_not_read_is_missing_to_it(
    client: FlaskClient, tenant: Caller, world: World
) -> None:
    secret = {"kind": "secret", "id": world.secret_id}
    hidden = _check(client, tenant, "secret:operate", secret, namespaceId=world.namespace_id)
    assert hidden.status_code == 404, hidden.json
    wrong_namespace = ids.new("namespace")
    missing = _check(
        client,
        tenant,
        "configuration:read",
        {"kind": "configuration", "id": world.configuration_id},
        namespaceId=wrong_namespace,
    )
    assert missing.status_code == 404


def test_only_an_administrator_asks_for_another_principal(
    client: FlaskClient, admin: Caller, tenant: Caller, world: World
) -> None:
    namespace = {"kind": "namespace", "id": world.namespace_id}
    refused = _check(client, tenant, "namespace:read", namespace, principalId=admin.principal_id)
    assert refused.status_code == 403, refused.json
    answered = _check(client, admin, "namespace:delete", namespace, principalId=tenant.principal_id)
    assert answered.status_code == 200, answered.json
    assert json_of(answered)["data"]["principalId"] == tenant.principal_id
    assert json_of(answered)["data"]["allowed"] is False
    unknown = _check(client, admin, "namespace:read", namespace, principalId=ids.new("principal"))
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        (
            {"permission": "namespace:fly", "resource": {"kind": "namespace", "id": "x"}},
            "/permission",
        ),
        (
            {"permission": "namespace:read", "resource": {"kind": "planet", "id": "x"}},
            "/resource/kind",
        ),
        (
            {"permission": "namespace:read", "resource": {"kind": "namespace", "id": "x"}},
            "/resource/id",
        ),
        (
            {"permission": "agent:read", "resource": {"kind": "agent", "id": "agt_x"}},
            "/resource/id",
        ),
    ],
)
def test_bad_input_is_refused_with_its_pointer(
    client: FlaskClient, admin: Caller, body: dict[str, Any], pointer: str
) -> None:
    response = client.post(ROUTE, json=body, headers=admin.headers)
    assert response.status_code == 400, response.json
    assert json_of(response)["errors"][0]["pointer"] == pointer
