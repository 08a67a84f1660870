"""``/v1/namespaces/{ns}/agents`` over HTTP: drafts, deploy, stop, delete, revisions and the
deployment status of every state."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.foundation import ids
from occ.state import audit, models, values, work_claims, work_queue
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.support import caller
from tests.support import grants, rows, work_items
from tests.support.responses import json_of

UUID4 = ids.UUID4_PATTERN


@dataclass(frozen=True)
class World:
    """A ready Namespace holding a Configuration and a Secret."""

    namespace_id: str
    configuration_id: str
    secret_id: str

    @property
    def agents(self) -> str:
        return f"/v1/namespaces/{self.namespace_id}/agents"


def make_world(db: Database, created_by: str, *, status: str = "ready") -> World:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=created_by, status=status)
        content = rows.configuration_and_secret(
            session, namespace_id, document={"model": "gpt", "n": 1}
        )
    return World(namespace_id, *content)


def agent_routes(base: str) -> list[tuple[str, str]]:
    """The routes of the Agent at ``base``: read, edit, delete, deploy, stop, its revisions."""
    return [
        ("GET", base),
        ("PATCH", base),
        ("DELETE", base),
        ("POST", f"{base}/deploy"),
        ("POST", f"{base}/stop"),
        ("GET", f"{base}/revisions"),
    ]


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


def body(world: World, **overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": "helper",
        "configurationId": world.configuration_id,
        "harness": {"id": "openclaw", "version": "2026.1.0"},
        "executionMode": "embedded",
        "harnessAuth": {"kind": "secret", "secretId": world.secret_id},
    }
    document.update(overrides)
    return document


def create(client: FlaskClient, caller: Caller, world: World, **overrides: Any) -> dict[str, Any]:
    """A draft Agent; its service principal holds nothing (``empower`` grants) unless asked."""
    overrides.setdefault("grantRuntimeAccess", False)
    response = client.post(world.agents, json=body(world, **overrides), headers=caller.headers)
    assert response.status_code == 201, response.json
    data: dict[str, Any] = json_of(response)["data"]
    return data


def empower(db: Database, agent: dict[str, Any], *permissions: str) -> None:
    """Grant the Agent's service principal what a deploy needs (or the given permissions)."""
    grants.give(
        db,
        agent["servicePrincipalId"],
        permissions or ("configuration:read", "secret:operate"),
        namespace_id=agent["namespaceId"],
    )


def deployable(
    client: FlaskClient, db: Database, admin: Caller, world: World
) -> tuple[dict[str, Any], str]:
    """An Agent ``admin`` created, its service principal empowered to deploy; it and its path."""
    agent = create(client, admin, world)
    empower(db, agent)
    return agent, f"{world.agents}/{agent['id']}"


def count(db: Database, model: type[models.Base], **where: Any) -> int:
    with db.transaction() as session:
        query = sa.select(sa.func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int(session.scalar(query) or 0)


def work_ids(db: Database, agent_id: str) -> list[str]:
    return [item.id for item in work_items.matching(db, models.ControllerWork.agent_id == agent_id)]


# -- drafts -------------------------------------------------------------------------------------


def test_create_read_list_update(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    created = client.post(world.agents, json=body(world), headers=admin.headers)
    assert created.status_code == 201, created.json
    agent = json_of(created)["data"]
    assert ids.is_valid("agent", agent["id"])
    assert {
        key: agent[key]
        for key in (
            "namespaceId",
            "name",
            "configurationId",
            "harness",
            "executionMode",
            "harnessAuth",
            "computeDriver",
            "status",
            "desiredRuntimeState",
            "activeRevisionId",
            "endpoint",
        )
    } == {
        "namespaceId": world.namespace_id,
        "name": "helper",
        "configurationId": world.configuration_id,
        "harness": {"id": "openclaw", "version": "2026.1.0"},
        "executionMode": "embedded",
        "harnessAuth": {"kind": "secret", "secretId": world.secret_id},
        "computeDriver": "local",
        "status": "active",
        "desiredRuntimeState": "stopped",
        "activeRevisionId": None,
        "endpoint": None,
    }
    assert ids.is_valid("principal", agent["servicePrincipalId"])
    assert work_ids(db, agent["id"]) == []  # a draft admits no work

    url = f"{world.agents}/{agent['id']}"
    assert json_of(client.get(url, headers=admin.headers))["data"] == agent
    listed = client.get(world.agents, headers=admin.headers)
    assert listed.status_code == 200 and json_of(listed)["data"] == [agent]

    patched = client.patch(
        url,
        json={
            "name": "renamed",
            "harness": {"id": "codex", "version": "0.9"},
            "executionMode": "dedicated",
        },
        headers=admin.headers,
    )
    assert patched.status_code == 200, patched.json
    assert (
        json_of(patched)["data"]["name"],
        json_of(patched)["data"]["harness"],
        json_of(patched)["data"]["executionMode"],
    ) == ("renamed", {"id": "codex", "version": "0.9"}, "dedicated")
    assert json_of(patched)["data"]["updatedAt"] >= agent["updatedAt"]
    assert work_ids(db, agent["id"]) == []
    with db.transaction() as session:
        actions = [e.action for e in audit.list_events(session, resource_id=agent["id"])]
    assert actions == ["agents.update", "agents.create"]


@pytest.mark.parametrize(
    ("overrides", "pointer"),
    [
        ({"name": " padded"}, "/name"),
        ({"configurationId": "cfg_nope"}, "/configurationId"),
        ({"configurationId": ids.new("configuration")}, "/configurationId"),
        ({"harness": {"id": "claude", "version": "1"}}, "/harness/id"),
        ({"harness": {"id": "openclaw", "version": "1 0"}}, "/harness/version"),
        ({"harness": {"id": "openclaw", "version": "x" * 65}}, "/harness/version"),
        ({"harness": {"id": "openclaw"}}, "/harness/version"),
        ({"executionMode": "dedicated"}, "/executionMode"),
        ({"harness": {"id": "codex", "version": "1"}}, "/executionMode"),
        ({"executionMode": "sideways"}, "/executionMode"),
        ({"harnessAuth": {"kind": "password", "secretId": ids.new("secret")}}, "/harnessAuth/kind"),
        ({"harnessAuth": {"kind": "secret", "secretId": "sec_x"}}, "/harnessAuth/secretId"),
        (
            {"harnessAuth": {"kind": "secret", "secretId": ids.new("secret")}},
            "/harnessAuth/secretId",
        ),
        ({"harnessAuth": {"kind": "secret"}}, "/harnessAuth/secretId"),
        ({"colour": "red"}, "/colour"),
        ({"harness": {"id": "openclaw", "version": "1", "extra": True}}, "/harness/extra"),
    ],
)
def test_create_rejects_bad_input_with_the_pointer(
    client: FlaskClient,
    admin: Caller,
    world: World,
    db: Database,
    overrides: dict[str, Any],
    pointer: str,
) -> None:
    response = client.post(world.agents, json=body(world, **overrides), headers=admin.headers)
    assert response.status_code == 400, response.json
    assert response.content_type == "application/problem+json"
    assert json_of(response)["code"] == "INVALID_REQUEST"
    assert pointer in [error["pointer"] for error in json_of(response)["errors"]]
    assert count(db, models.Agent) == 0


def test_create_needs_every_field(client: FlaskClient, admin: Caller, world: World) -> None:
    document = body(world)
    del document["configurationId"]
    response = client.post(world.agents, json=document, headers=admin.headers)
    assert response.status_code == 400
    assert [e["pointer"] for e in json_of(response)["errors"]] == ["/configurationId"]


def test_references_of_another_namespace_are_invalid(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    other = make_world(db, admin.principal_id)
    for overrides, pointer in (
        ({"configurationId": other.configuration_id}, "/configurationId"),
        ({"harnessAuth": {"kind": "secret", "secretId": other.secret_id}}, "/harnessAuth/secretId"),
    ):
        response = client.post(world.agents, json=body(world, **overrides), headers=admin.headers)
        assert response.status_code == 400
        assert [e["pointer"] for e in json_of(response)["errors"]] == [pointer]


def test_duplicate_name_conflicts(client: FlaskClient, admin: Caller, world: World) -> None:
    create(client, admin, world)
    again = client.post(world.agents, json=body(world), headers=admin.headers)
    assert again.status_code == 409 and json_of(again)["code"] == "RESOURCE_CONFLICT"


def test_patch_validates(client: FlaskClient, admin: Caller, world: World, db: Database) -> None:
    agent = create(client, admin, world)
    create(client, admin, world, name="taken")
    url = f"{world.agents}/{agent['id']}"
    for patch, pointer in (
        ({}, ""),
        ({"harness": {"id": "codex", "version": "1"}}, "/executionMode"),
        ({"executionMode": "dedicated"}, "/executionMode"),
        ({"name": None}, "/name"),
        ({"configurationId": ids.new("configuration")}, "/configurationId"),
        ({"status": "deleting"}, "/status"),
    ):
        response = client.patch(url, json=patch, headers=admin.headers)
        assert response.status_code == 400, (patch, response.json)
        assert pointer in [e["pointer"] for e in json_of(response)["errors"]]
    taken = client.patch(url, json={"name": "taken"}, headers=admin.headers)
    assert taken.status_code == 409
    assert json_of(client.get(url, headers=admin.headers))["data"] == agent


def test_every_route_needs_a_key(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent = create(client, admin, world)
    base = f"{world.agents}/{agent['id']}"
    revision = ids.new("agent_revision")
    revoked = caller(db, "agent:read")
    with db.transaction() as session:
        session.execute(
            sa.update(models.ApiKey)
            .where(models.ApiKey.principal_id == revoked.principal_id)
            .values(revoked_at=sa.func.clock_timestamp())
        )
    for method, url in (
        ("POST", world.agents),
        ("GET", world.agents),
        *agent_routes(base),
        ("GET", f"{base}/revisions/{revision}"),
        ("GET", f"{base}/deployments/{revision}"),
    ):
        for headers in ({}, revoked.headers):
            response = client.open(url, method=method, headers=headers)
            assert response.status_code == 401, (method, url)
            assert json_of(response)["code"] == "UNAUTHENTICATED"


def test_another_tenants_agent_is_not_found(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent = create(client, admin, world)
    other = make_world(db, admin.principal_id)
    tenant = caller(
        db,
        "agent:read",
        "agent:update",
        "agent:deploy",
        "agent:operate",
        "agent:delete",
        "agent_revision:read",
        "agent:create",
        namespace_id=other.namespace_id,
    )
    base = f"{world.agents}/{agent['id']}"
    for method, url in (
        *agent_routes(base),
        ("GET", world.agents),
        ("POST", world.agents),
    ):
        kwargs: dict[str, Any] = {"json": {"name": "mine"}} if method == "PATCH" else {}
        if method == "POST" and url == world.agents:
            kwargs = {"json": body(world)}
        response = client.open(url, method=method, headers=tenant.headers, **kwargs)
        assert response.status_code == 404, (method, url, response.json)
        assert json_of(response)["code"] == "NOT_FOUND"
    # the agent under the other Namespace's path, and malformed ids
    for url in (
        f"{other.agents}/{agent['id']}",
        f"{world.agents}/agt_nope",
        f"/v1/namespaces/nope/agents/{agent['id']}",
        f"{base}/revisions/rev_nope",
        f"{base}/deployments/{ids.new('agent_revision')}",
    ):
        assert client.get(url, headers=admin.headers).status_code == 404, url
    assert json_of(client.get(base, headers=admin.headers))["data"]["status"] == "active"


def test_list_is_filtered_per_agent(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    first = create(client, admin, world, name="first")
    create(client, admin, world, name="second")
    reader = caller(db)
    only_first = grants.exactly(world.namespace_id, "agent", first["id"])
    grants.give(db, reader.principal_id, ["agent:read"], **only_first)
    listed = client.get(world.agents, headers=reader.headers)
    assert [agent["id"] for agent in json_of(listed)["data"]] == [first["id"]]
    assert client.get(world.agents, headers=caller(db).headers).status_code == 404


# -- deploy -------------------------------------------------------------------------------------


def test_deploy_twice_makes_two_revisions(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent, base = deployable(client, db, admin, world)

    first = client.post(f"{base}/deploy", headers=admin.headers)
    assert first.status_code == 202, first.json
    accepted = json_of(first)["data"]
    revision = accepted["revision"]
    assert accepted["deploymentId"] == revision["id"]
    assert {
        key: revision[key]
        for key in (
            "agentId",
            "namespaceId",
            "revisionNumber",
            "configurationId",
            "configurationGeneration",
            "configurationDocument",
            "harness",
            "harnessAuth",
            "computeDriver",
            "servicePrincipalId",
            "actorId",
        )
    } == {
        "agentId": agent["id"],
        "namespaceId": world.namespace_id,
        "revisionNumber": 1,
        "configurationId": world.configuration_id,
        "configurationGeneration": 1,
        "configurationDocument": {"model": "gpt", "n": 1},
        "harness": {"id": "openclaw", "version": "2026.1.0", "mode": "embedded"},
        "harnessAuth": {"kind": "secret", "secretId": world.secret_id},
        "computeDriver": "local",
        "servicePrincipalId": agent["servicePrincipalId"],
        "actorId": admin.principal_id,
    }
    second = client.post(f"{base}/deploy", json={}, headers=admin.headers)
    assert second.status_code == 202
    assert json_of(second)["data"]["revision"]["revisionNumber"] == 2

    assert json_of(client.get(base, headers=admin.headers))["data"]["desiredRuntimeState"] == (
        "running"
    )
    revision_ids = [revision["id"], json_of(second)["data"]["deploymentId"]]
    assert work_ids(db, agent["id"]) == [f"agent_revision:{rid}:reconcile" for rid in revision_ids]
    with db.transaction() as session:
        item = work_queue.get(session, f"agent_revision:{revision['id']}:reconcile")
    assert item is not None and item.owner == values.WorkOwner(
        namespace_id=world.namespace_id,
        actor_id=admin.principal_id,
        agent_id=agent["id"],
        revision_id=revision["id"],
    )

    listed = client.get(f"{base}/revisions", headers=admin.headers)
    assert [r["revisionNumber"] for r in json_of(listed)["data"]] == [2, 1]
    read = client.get(f"{base}/revisions/{revision['id']}", headers=admin.headers)
    assert read.status_code == 200 and json_of(read)["data"] == revision


def test_deploy_rejects_a_body(client: FlaskClient, admin: Caller, world: World) -> None:
    agent = create(client, admin, world)
    response = client.post(
        f"{world.agents}/{agent['id']}/deploy", json={"force": True}, headers=admin.headers
    )
    assert response.status_code == 400
    assert [e["pointer"] for e in json_of(response)["errors"]] == ["/force"]


def test_deploy_needs_a_ready_namespace(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = make_world(db, admin.principal_id, status="provisioning")
    agent = create(client, admin, world)
    empower(db, agent)
    response = client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers)
    assert response.status_code == 409
    assert json_of(response)["code"] == "NAMESPACE_NOT_READY"
    assert count(db, models.AgentRevision) == 0
    assert work_ids(db, agent["id"]) == []


def test_deploy_denied_for_the_service_principal(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent = create(client, admin, world)
    empower(db, agent, "configuration:read")  # but not secret:operate
    response = client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers)

    assert response.status_code == 403 and json_of(response)["code"] == "FORBIDDEN"
    assert count(db, models.AgentRevision) == 0
    assert work_ids(db, agent["id"]) == []
    with db.transaction() as session:
        [denial] = audit.list_events(session, kind="authorization_denial")
    assert (denial.action, denial.actor_id, denial.resource_kind, denial.resource_id) == (
        "agents.deploy",
        admin.principal_id,
        "secret",
        world.secret_id,
    )
    assert denial.details["permission"] == "secret:operate"
    assert denial.details["authorization"]["principalId"] == agent["servicePrincipalId"]
    assert denial.details["request"]["principalRole"] == "servicePrincipal"
    assert (
        json_of(client.get(f"{world.agents}/{agent['id']}", headers=admin.headers))["data"][
            "desiredRuntimeState"
        ]
        == "stopped"
    )


# -- stop and delete ----------------------------------------------------------------------------


def test_stop_admits_a_fresh_work_item_each_time(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent, base = deployable(client, db, admin, world)
    client.post(f"{base}/deploy", headers=admin.headers)
    for _ in range(2):
        stopped = client.post(f"{base}/stop", headers=admin.headers)
        assert stopped.status_code == 202, stopped.json
        assert json_of(stopped)["data"]["desiredRuntimeState"] == "stopped"
    stops = [w for w in work_ids(db, agent["id"]) if ":reconcile:stopped:" in w]
    assert len(set(stops)) == 2
    for work_id in stops:
        assert re.fullmatch(f"agent:{agent['id']}:reconcile:stopped:{UUID4}", work_id)


def test_repair_needs_a_running_revision_then_admits_one_owned_by_the_caller(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent, base = deployable(client, db, admin, world)
    refused = client.post(f"{base}/repair", headers=admin.headers)
    assert refused.status_code == 409 and json_of(refused)["code"] == "AGENT_NOT_RUNNING"
    assert work_ids(db, agent["id"]) == []
    deployed = client.post(f"{base}/deploy", headers=admin.headers)
    revision_id = json_of(deployed)["data"]["deploymentId"]
    with db.transaction() as session:  # as a worker would have made it active
        session.execute(
            sa.update(models.Agent)
            .where(models.Agent.id == agent["id"])
            .values(active_revision_id=revision_id)
        )

    for _ in range(2):  # a repeat while the repair is queued admits no second one
        repaired = client.post(f"{base}/repair", headers=admin.headers)
        assert repaired.status_code == 202, repaired.json
    repairs = [w for w in work_ids(db, agent["id"]) if ":maintenance:" in w]
    assert len(repairs) == 1
    assert repairs[0].startswith(f"agent_revision:{revision_id}:maintenance:")
    with db.transaction() as session:
        row = session.get(models.ControllerWork, repairs[0])
        assert row is not None and row.actor_id == admin.principal_id


def test_delete_then_everything_else_conflicts(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent, base = deployable(client, db, admin, world)
    deleted = client.delete(base, headers=admin.headers)
    assert deleted.status_code == 202, deleted.json
    assert (
        json_of(deleted)["data"]["status"],
        json_of(deleted)["data"]["desiredRuntimeState"],
    ) == (
        "deleting",
        "stopped",
    )
    again = client.delete(base, headers=admin.headers)
    assert again.status_code == 202 and json_of(again)["data"]["status"] == "deleting"
    assert work_ids(db, agent["id"]) == [f"agent:{agent['id']}:reconcile:deleted"]

    late: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("POST", f"{base}/deploy", {}),
        ("POST", f"{base}/stop", {}),
        ("POST", f"{base}/repair", {}),
        ("PATCH", base, {"json": {"name": "late"}}),
    )
    for method, url, kwargs in late:
        response = client.open(url, method=method, headers=admin.headers, **kwargs)
        assert response.status_code == 409, (url, response.json)
        assert json_of(response)["code"] == "AGENT_DELETING"
    assert work_ids(db, agent["id"]) == [f"agent:{agent['id']}:reconcile:deleted"]


def test_failed_delete_is_retried_and_taken_over(
    client: FlaskClient, admin: Caller, world: World, db: Database, policy: values.QueuePolicy
) -> None:
    agent = create(client, admin, world)
    base = f"{world.agents}/{agent['id']}"
    work_id = f"agent:{agent['id']}:reconcile:deleted"
    client.delete(base, headers=admin.headers)
    drive(db, policy, work_id, lambda s, run: work_queue.fail(s, run, code="UNKNOWN_FAILURE"))

    assert client.delete(base, headers=admin.headers).status_code == 202
    with db.transaction() as session:
        item = work_queue.get(session, work_id)
    assert item is not None and item.state is values.WorkState.QUEUED
    assert item.owner.actor_id == admin.principal_id

    drive(db, policy, work_id, lambda s, run: work_queue.fail(s, run, code="UNKNOWN_FAILURE"))
    operator = caller(db, "agent:delete", "agent:read", namespace_id=world.namespace_id)
    assert client.delete(base, headers=operator.headers).status_code == 202
    with db.transaction() as session:
        item = work_queue.get(session, work_id)
        events = audit.list_events(session, work_id=work_id)
    assert item is not None and item.state is values.WorkState.QUEUED
    assert item.owner.actor_id == operator.principal_id
    takeover = next(e for e in events if e.action == "agents.delete")
    assert takeover.actor_id == operator.principal_id
    assert takeover.details["takeover"] is True
    assert takeover.details["previousActorId"] == admin.principal_id


def test_delete_work_owned_by_another_actor_is_a_conflict(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    """An operator's repair reactivated an Agent whose deletion work is still queued for the
    administrator: another caller's delete may not adopt that work silently."""
    agent = create(client, admin, world)
    base = f"{world.agents}/{agent['id']}"
    client.delete(base, headers=admin.headers)
    with db.transaction() as session:
        session.execute(
            sa.update(models.Agent).where(models.Agent.id == agent["id"]).values(status="active")
        )
    operator = caller(db, "agent:delete", "agent:read", namespace_id=world.namespace_id)
    response = client.delete(base, headers=operator.headers)
    assert response.status_code == 409 and json_of(response)["code"] == "RESOURCE_CONFLICT"
    assert json_of(client.get(base, headers=admin.headers))["data"]["status"] == "active"


# -- deployment status --------------------------------------------------------------------------


def claim_run(db: Database, policy: values.QueuePolicy, work_id: str) -> values.Claim:
    """Claim and start ``work_id``, releasing anything else the claim picked up."""
    for _ in range(5):
        with db.transaction() as session:
            claims = work_claims.claim(session, policy, limit=10)
        for dispatch in claims:
            with db.transaction() as session:
                if dispatch.work_id != work_id:
                    work_queue.release(session, dispatch)
                    continue
                run = work_queue.start(session, policy, dispatch)
                assert run is not None
                return run
    raise AssertionError(f"{work_id} was never claimed")


def drive(
    db: Database,
    policy: values.QueuePolicy,
    work_id: str,
    finish: Callable[[orm.Session, values.Claim], object],
) -> None:
    """Claim ``work_id`` and finish it (complete, fail, defer...) in one transaction."""
    run = claim_run(db, policy, work_id)
    with db.transaction() as session:
        finish(session, run)


def activate(session: orm.Session, agent_id: str, revision_id: str | None) -> None:
    session.execute(
        sa.update(models.Agent)
        .where(models.Agent.id == agent_id)
        .values(active_revision_id=revision_id)
    )


def test_deployment_status_of_every_state(
    client: FlaskClient, admin: Caller, world: World, db: Database, policy: values.QueuePolicy
) -> None:
    agent, base = deployable(client, db, admin, world)

    def deploy() -> str:
        response = client.post(f"{base}/deploy", headers=admin.headers)
        assert response.status_code == 202
        return str(json_of(response)["data"]["deploymentId"])

    def status(revision_id: str) -> dict[str, Any]:
        response = client.get(f"{base}/deployments/{revision_id}", headers=admin.headers)
        assert response.status_code == 200, response.json
        data: dict[str, Any] = json_of(response)["data"]
        assert (data["deploymentId"], data["revisionId"], data["agentId"], data["namespaceId"]) == (
            revision_id,
            revision_id,
            agent["id"],
            world.namespace_id,
        )
        return data

    first = deploy()
    pending = status(first)
    assert (pending["state"], pending["reasonCode"], pending["error"], pending["warnings"]) == (
        "pending",
        None,
        None,
        [],
    )
    assert pending["progress"]["code"] is None and pending["progress"]["nextAttemptAt"]

    # claimed and reporting progress: still pending, no next attempt
    run = claim_run(db, policy, work_key(first))
    with db.transaction() as session:
        run = work_queue.renew(session, policy, run, progress_code="REVISION_INCOMPLETE")
    claimed = status(first)
    assert claimed["state"] == "pending"
    assert claimed["progress"]["code"] == "REVISION_INCOMPLETE"
    assert claimed["progress"]["at"] and claimed["progress"]["nextAttemptAt"] is None

    # activated with a warning
    warning = {"code": "IMAGE_PINNED", "detail": "pinned to 2026.1.0"}
    with db.transaction() as session:
        activate(session, agent["id"], first)
        work_queue.complete(
            session, run, code="REVISION_ACTIVATED", result_data={"warnings": [warning]}
        )
    active = status(first)
    assert (
        active["state"],
        active["reasonCode"],
        active["error"],
        active["progress"],
        active["warnings"],
    ) == ("active", "REVISION_ACTIVATED", None, None, [warning])

    # a second revision takes over: the first is superseded
    second = deploy()

    def takes_over(session: orm.Session, run: values.Claim) -> None:
        activate(session, agent["id"], second)
        work_queue.complete(session, run, code="REVISION_ACTIVATED")

    drive(db, policy, work_key(second), takes_over)
    assert status(first)["state"] == "superseded"
    assert status(second)["state"] == "active"

    def deployed(finish: Callable[[orm.Session, values.Claim], object]) -> str:
        """A new deployment whose work ``finish`` ends."""
        deployment = deploy()
        drive(db, policy, work_key(deployment), finish)
        return deployment

    # superseded before activation, and stopped before activation
    third = deployed(lambda s, run: work_queue.complete(s, run, code="REVISION_SUPERSEDED"))
    assert (status(third)["state"], status(third)["reasonCode"]) == (
        "superseded",
        "REVISION_SUPERSEDED",
    )
    fourth = deployed(lambda s, run: work_queue.complete(s, run, code="REVISION_STOPPED"))
    assert status(fourth)["state"] == "stopped"

    # failed: a fixed public message, never driver text
    fifth = deployed(lambda s, run: work_queue.fail(s, run, code="RUNTIME_STARTUP_FAILED"))
    failed = status(fifth)
    assert (failed["state"], failed["reasonCode"], failed["progress"], failed["warnings"]) == (
        "failed",
        "RUNTIME_STARTUP_FAILED",
        None,
        [],
    )
    assert failed["error"] == {
        "code": "RUNTIME_STARTUP_FAILED",
        "message": "The runtime failed to start.",
        "data": None,
    }

    # the active one after a stop cleared the active pointer
    with db.transaction() as session:
        activate(session, agent["id"], None)
    client.post(f"{base}/stop", headers=admin.headers)
    assert status(second)["state"] == "stopped"


def work_key(revision_id: str) -> str:
    return f"agent_revision:{revision_id}:reconcile"


def test_deployment_status_of_a_convergence_failure(
    client: FlaskClient, admin: Caller, world: World, db: Database, policy: values.QueuePolicy
) -> None:
    _, base = deployable(client, db, admin, world)
    revision_id = json_of(client.post(f"{base}/deploy", headers=admin.headers))["data"][
        "deploymentId"
    ]
    expired = values.QueuePolicy(convergence_timeout_ms=1)
    drive(
        db,
        policy,
        work_key(revision_id),
        lambda s, run: work_queue.defer(s, expired, run, code="REVISION_INCOMPLETE"),
    )
    failed = json_of(client.get(f"{base}/deployments/{revision_id}", headers=admin.headers))["data"]
    assert failed["state"] == "failed"
    assert failed["error"] == {
        "code": "CONVERGENCE_DEADLINE_EXCEEDED",
        "message": "The resource did not converge before the deadline.",
        "data": {"timeoutMs": 1},
    }


# -- the database keeps revisions immutable -----------------------------------------------------


def test_revisions_are_immutable(
    client: FlaskClient, admin: Caller, world: World, db: Database, owner_db: Database
) -> None:
    _, base = deployable(client, db, admin, world)
    revision_id = json_of(client.post(f"{base}/deploy", headers=admin.headers))["data"][
        "deploymentId"
    ]
    change = (
        sa.update(models.AgentRevision)
        .where(models.AgentRevision.id == revision_id)
        .values(harness_version="9.9.9")
    )
    with (
        pytest.raises(sa_exc.ProgrammingError, match="permission denied"),
        db.transaction() as session,
    ):
        session.execute(change)  # occ_app holds no UPDATE privilege
    with pytest.raises(sa_exc.IntegrityError, match="immutable"), owner_db.transaction() as session:
        session.execute(change)  # and the trigger stops even the owner
    revision = json_of(client.get(f"{base}/revisions/{revision_id}", headers=admin.headers))["data"]
    assert revision["harness"]["version"] == "2026.1.0"
