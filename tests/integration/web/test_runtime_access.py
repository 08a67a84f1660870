"""``grantRuntimeAccess`` on Agent creation: the built-in ``agent-runtime`` Role bound to the
service principal on exactly its Configuration and Secret, audited, in the Agent's transaction;
refused (and nothing written) for a caller who may not create access bindings; left out, granted
when the caller may (as the CLI asks), else no grant and no denial; and what a deploy refused for
the service principal says."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.state import iam_policy, models
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.support import caller
from tests.integration.web.test_agents import World, body, make_world
from tests.support.responses import json_of


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


def _caller(db: Database, admin: Caller, permissions: list[str], namespace_id: str) -> Caller:
    return caller(db, *permissions, namespace_id=namespace_id, name="tenant")


def _created(client: FlaskClient, by: Caller, world: World, **fields: Any) -> dict[str, Any]:
    """Create an Agent in ``world`` (``fields`` added to its body) as ``by``, asserting the
    201; its representation."""
    response = client.post(world.agents, json=body(world, **fields), headers=by.headers)
    assert response.status_code == 201, response.json
    agent: dict[str, Any] = json_of(response)["data"]
    return agent


def _deploy(client: FlaskClient, admin: Caller, world: World, agent: dict[str, Any]) -> None:
    deploy = client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers)
    assert deploy.status_code == 202, deploy.json


def _bindings_of(db: Database, agent: dict[str, Any]) -> list[iam_policy.AccessBinding]:
    """The access bindings of the Agent's service principal."""
    with db.snapshot() as session:
        return iam_policy.list_bindings(session, principal_id=agent["servicePrincipalId"])


def _runtime_role(db: Database, world: World) -> role_rows.Role | None:
    """The Namespace's built-in ``agent-runtime`` Role, if it has been made."""
    with db.snapshot() as session:
        return role_rows.find_role(session, name="agent-runtime", namespace_id=world.namespace_id)


def _counts(db: Database) -> tuple[int, ...]:
    with db.snapshot() as session:
        return tuple(
            session.execute(sa.select(sa.func.count()).select_from(model)).scalar_one()
            for model in (models.Agent, models.Principal, models.Role, models.AccessBinding)
        )


def _audit(db: Database, action: str) -> list[dict[str, Any]]:
    with db.snapshot() as session:
        rows = session.execute(
            sa.select(models.AuditEvent).where(models.AuditEvent.action == action)
        ).scalars()
        return [
            {"resource_id": row.resource_id, "details": row.details, "actor_id": row.actor_id}
            for row in rows
        ]


def test_granted_runtime_access_is_exact_audited_and_lets_the_deploy_through(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent = _created(client, admin, world, grantRuntimeAccess=True)
    bindings = _bindings_of(db, agent)
    assert sorted((b.resource_kind, b.resource_id) for b in bindings) == sorted(
        [("configuration", world.configuration_id), ("secret", world.secret_id)]
    )
    assert {b.namespace_id for b in bindings} == {world.namespace_id}
    with db.snapshot() as session:
        role = role_rows.get_role(session, bindings[0].role_id)
    assert role is not None
    assert (role.name, role.namespace_id) == ("agent-runtime", world.namespace_id)
    assert role.permissions == ("configuration:read", "secret:operate")
    assert {b.role_id for b in bindings} == {role.id}

    audited = _audit(db, "access_bindings.create")
    assert sorted(event["resource_id"] for event in audited) == sorted(b.id for b in bindings)
    assert all(event["actor_id"] == admin.principal_id for event in audited)
    assert all(
        event["details"]["grantRuntimeAccess"] == {"agentId": agent["id"]} for event in audited
    )
    [role_event] = _audit(db, "roles.create")
    assert role_event["resource_id"] == role.id
    [created] = _audit(db, "agents.create")
    assert created["details"]["runtimeAccess"] == {
        "roleId": role.id,
        "bindingIds": [
            b.id for b in sorted(bindings, key=lambda b: b.resource_kind != "configuration")
        ],
    }

    _deploy(client, admin, world, agent)

    # a second Agent reuses the Namespace's Role
    again = _bindings_of(db, _created(client, admin, world, name="second", grantRuntimeAccess=True))
    assert {b.role_id for b in again} == {role.id}
    assert len(_audit(db, "roles.create")) == 1


def test_a_caller_who_may_not_create_bindings_is_refused_and_nothing_is_written(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    tenant = _caller(db, admin, ["agent:create", "namespace:read"], world.namespace_id)
    before = _counts(db)

    refused = client.post(
        world.agents, json=body(world, grantRuntimeAccess=True), headers=tenant.headers
    )
    assert refused.status_code == 403, refused.json
    assert "installation:administer" in json_of(refused)["detail"]
    assert _counts(db) == before
    assert _runtime_role(db, world) is None
    [denial] = _audit(db, "agents.create")
    assert denial["details"]["permission"] == "installation:administer"

    # without the grant the same caller may create the Agent
    assert _bindings_of(db, _created(client, tenant, world)) == []


def test_left_out_an_administrator_grants_as_the_cli_does(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent = _created(client, admin, world)
    bindings = _bindings_of(db, agent)
    assert sorted((b.resource_kind, b.resource_id) for b in bindings) == sorted(
        [("configuration", world.configuration_id), ("secret", world.secret_id)]
    )
    _deploy(client, admin, world, agent)

    declined = _created(client, admin, world, name="plain", grantRuntimeAccess=False)
    assert _bindings_of(db, declined) == []


def test_left_out_a_caller_who_may_not_grant_gets_an_agent_without_a_grant_or_a_denial(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    tenant = _caller(db, admin, ["agent:create", "namespace:read"], world.namespace_id)
    agent = _created(client, tenant, world)
    assert _bindings_of(db, agent) == []
    assert _runtime_role(db, world) is None
    assert _audit(db, "access_bindings.create") == []
    [created] = _audit(db, "agents.create")  # the creation only: no denial was audited
    assert created["resource_id"] == agent["id"]
    assert "runtimeAccess" not in created["details"]


def test_grant_runtime_access_must_be_a_boolean(
    client: FlaskClient, admin: Caller, world: World
) -> None:
    for value in (1, "true", None):
        response = client.post(
            world.agents, json=body(world, grantRuntimeAccess=value), headers=admin.headers
        )
        assert response.status_code == 400, (value, response.json)
        assert json_of(response)["errors"][0]["pointer"] == "/grantRuntimeAccess"


def test_a_foreign_agent_runtime_role_is_not_widened_or_reused(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    with db.transaction() as session:
        role_rows.create_role(
            session,
            name="agent-runtime",
            permissions=["configuration:read"],
            namespace_id=world.namespace_id,
        )
    response = client.post(
        world.agents, json=body(world, grantRuntimeAccess=True), headers=admin.headers
    )
    assert response.status_code == 409, response.json
    assert "agent-runtime" in json_of(response)["detail"]


def test_a_deploy_refused_for_the_service_principal_names_the_permission(
    client: FlaskClient, admin: Caller, world: World
) -> None:
    agent = _created(client, admin, world, grantRuntimeAccess=False)
    refused = client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers)
    assert refused.status_code == 403, refused.json
    detail = json_of(refused)["detail"]
    assert agent["servicePrincipalId"] in detail
    assert f"configuration:read on configuration {world.configuration_id}" in detail
    assert "no_matching_binding" in detail


def test_runtime_access_granted_afterwards_lets_a_refused_deploy_through(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent = _created(client, admin, world, grantRuntimeAccess=False)
    agent_path = f"{world.agents}/{agent['id']}"
    refused = client.post(f"{agent_path}/deploy", headers=admin.headers)
    assert refused.status_code == 403, refused.json
    assert "runtime-access" in json_of(refused)["detail"]

    granted = client.post(f"{agent_path}/runtime-access", headers=admin.headers)
    assert granted.status_code == 200, granted.json
    answer = json_of(granted)["data"]
    bindings = _bindings_of(db, agent)
    assert sorted((b.resource_kind, b.resource_id) for b in bindings) == sorted(
        [("configuration", world.configuration_id), ("secret", world.secret_id)]
    )
    assert sorted(answer["bindingIds"]) == sorted(b.id for b in bindings)
    assert answer["servicePrincipalId"] == agent["servicePrincipalId"]
    assert {b.role_id for b in bindings} == {answer["roleId"]}
    audited = _audit(db, "access_bindings.create")
    assert sorted(event["resource_id"] for event in audited) == sorted(answer["bindingIds"])

    again = client.post(f"{agent_path}/runtime-access", json={}, headers=admin.headers)
    assert again.status_code == 200, again.json
    assert json_of(again)["data"]["bindingIds"] == []
    assert len(_bindings_of(db, agent)) == 2
    assert len(_audit(db, "access_bindings.create")) == 2

    _deploy(client, admin, world, agent)


def test_granting_afterwards_needs_installation_administer_and_the_agent(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent = _created(client, admin, world, grantRuntimeAccess=False)
    agent_path = f"{world.agents}/{agent['id']}/runtime-access"
    reader = _caller(db, admin, ["agent:read", "namespace:read"], world.namespace_id)
    stranger = _caller(db, admin, [], world.namespace_id)
    before = _counts(db)
    refused = client.post(agent_path, headers=reader.headers)
    assert refused.status_code == 403, refused.json
    assert "installation:administer" in json_of(refused)["detail"]
    hidden = client.post(agent_path, headers=stranger.headers)
    assert hidden.status_code == 404, hidden.json
    missing = client.post(
        f"{world.agents}/agt_00000000-0000-4000-8000-000000000000/runtime-access",
        headers=admin.headers,
    )
    assert missing.status_code == 404, missing.json
    assert _counts(db) == before


def _second_configuration(client: FlaskClient, admin: Caller, world: World) -> str:
    created = client.post(
        f"/v1/namespaces/{world.namespace_id}/configurations",
        json={"name": "second", "document": {}},
        headers=admin.headers,
    )
    assert created.status_code == 201, created.json
    return str(json_of(created)["data"]["id"])


def _to_update(client: FlaskClient, admin: Caller, world: World) -> tuple[dict[str, Any], str, str]:
    """An Agent to update, a second Configuration to move it to, and the Agent's path."""
    agent = _created(client, admin, world)
    return agent, _second_configuration(client, admin, world), f"{world.agents}/{agent['id']}"


def test_an_update_grants_a_new_configuration_as_creation_does(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent, second, path = _to_update(client, admin, world)

    renamed = client.patch(path, json={"name": "renamed"}, headers=admin.headers)
    assert renamed.status_code == 200, renamed.json
    before = _bindings_of(db, agent)
    assert ("configuration", second) not in [(b.resource_kind, b.resource_id) for b in before]

    updated = client.patch(path, json={"configurationId": second}, headers=admin.headers)

    assert updated.status_code == 200, updated.json
    after = _bindings_of(db, agent)
    assert ("configuration", second) in [(b.resource_kind, b.resource_id) for b in after]
    [audited] = [e for e in _audit(db, "agents.update") if "runtimeAccess" in e["details"]]
    assert set(audited["details"]["runtimeAccess"]["bindingIds"]) == {
        b.id for b in after if b.resource_id == second
    }
    _deploy(client, admin, world, agent)


def test_an_update_declining_the_grant_or_by_a_tenant_binds_nothing_and_denies_nothing(
    client: FlaskClient, admin: Caller, db: Database, world: World
) -> None:
    agent, second, path = _to_update(client, admin, world)
    held = _bindings_of(db, agent)
    tenant = _caller(
        db, admin, ["agent:update", "agent:read", "namespace:read"], world.namespace_id
    )

    declined = client.patch(
        path, json={"configurationId": second, "grantRuntimeAccess": False}, headers=admin.headers
    )
    assert declined.status_code == 200, declined.json
    by_tenant = client.patch(
        path, json={"configurationId": world.configuration_id}, headers=tenant.headers
    )
    assert by_tenant.status_code == 200, by_tenant.json
    assert _bindings_of(db, agent) == held

    refused = client.patch(
        path, json={"configurationId": second, "grantRuntimeAccess": True}, headers=tenant.headers
    )
    assert refused.status_code == 403, refused.json
    agent_now = json_of(client.get(path, headers=admin.headers))["data"]
    assert agent_now["configurationId"] == world.configuration_id  # nothing changed
    assert _bindings_of(db, agent) == held
