"""An Agent's ``runtimeStatus`` over HTTP: what the workers last observed of its active revision,
read with the Agent (get, list, and what create, update, stop and delete answer)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.state import runtime_observations
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.test_agents import World, activate, create, empower, make_world
from tests.support.responses import json_of

RUNTIME_FIELDS = ("runtimeStatus", "runtimeObservedAt", "runtimeReasonCode")


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


def runtime(agent: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(agent[name] for name in RUNTIME_FIELDS)


def observe(db: Database, agent_id: str, revision_id: str, status: str, code: str) -> None:
    with db.transaction() as session:
        runtime_observations.record(
            session, agent_id, revision_id, runtime_observations.RuntimeStatus(status), code
        )


def test_runtime_status_follows_the_observation_of_the_active_revision(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    created = create(client, admin, world)
    assert runtime(created) == ("unknown", None, None)
    base = f"{world.agents}/{created['id']}"
    empower(db, created)

    def read() -> dict[str, Any]:
        response = client.get(base, headers=admin.headers)
        assert response.status_code == 200, response.json
        data: dict[str, Any] = json_of(response)["data"]
        [listed] = [
            item
            for item in json_of(client.get(world.agents, headers=admin.headers))["data"]
            if item["id"] == created["id"]
        ]
        assert runtime(listed) == runtime(data)
        return data

    first = json_of(client.post(f"{base}/deploy", headers=admin.headers))["data"]["deploymentId"]
    # observed, but not the active revision yet: unknown
    observe(db, created["id"], first, "ready", "REVISION_ACTIVATED")
    assert runtime(read()) == ("unknown", None, None)

    with db.transaction() as session:
        activate(session, created["id"], first)
    ready = read()
    assert ready["runtimeStatus"] == "ready"
    assert ready["runtimeReasonCode"] == "REVISION_ACTIVATED"
    assert ready["runtimeObservedAt"] is not None

    observe(db, created["id"], first, "degraded", "REVISION_INCOMPLETE")
    degraded = read()
    assert (degraded["runtimeStatus"], degraded["runtimeReasonCode"]) == (
        "degraded",
        "REVISION_INCOMPLETE",
    )
    assert degraded["runtimeObservedAt"] >= ready["runtimeObservedAt"]

    # what the mutations answer carries the same fields, read in their transaction
    patched = client.patch(base, json={"name": "renamed"}, headers=admin.headers)
    assert patched.status_code == 200 and runtime(json_of(patched)["data"]) == runtime(degraded)
    stopped = client.post(f"{base}/stop", headers=admin.headers)
    assert stopped.status_code == 202 and runtime(json_of(stopped)["data"]) == runtime(degraded)
    deleting = client.delete(base, headers=admin.headers)
    assert deleting.status_code == 202 and runtime(json_of(deleting)["data"]) == runtime(degraded)


def test_a_list_reads_each_agent_with_its_own_observation(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agents = [create(client, admin, world, name=f"agent-{n}") for n in range(3)]
    for agent in agents[:2]:
        empower(db, agent)
    revisions = [
        json_of(client.post(f"{world.agents}/{agent['id']}/deploy", headers=admin.headers))["data"][
            "deploymentId"
        ]
        for agent in agents[:2]
    ]
    with db.transaction() as session:
        for agent, revision in zip(agents[:2], revisions, strict=True):
            activate(session, agent["id"], revision)
    observe(db, agents[0]["id"], revisions[0], "ready", "REVISION_ACTIVATED")
    observe(db, agents[1]["id"], revisions[1], "degraded", "REVISION_INCOMPLETE")
    listed = {
        item["id"]: item["runtimeStatus"]
        for item in json_of(client.get(world.agents, headers=admin.headers))["data"]
    }
    assert listed == {
        agents[0]["id"]: "ready",
        agents[1]["id"]: "degraded",
        agents[2]["id"]: "unknown",
    }


def test_the_document_declares_the_runtime_fields(client: FlaskClient) -> None:
    document = json_of(client.get("/v1/openapi.json"))
    properties = document["components"]["schemas"]["Agent"]["properties"]
    assert properties["runtimeStatus"]["enum"] == ["ready", "degraded", "unknown"]
    assert properties["runtimeObservedAt"]["format"] == "date-time"
    assert properties["runtimeObservedAt"]["nullable"] is True
    assert properties["runtimeReasonCode"]["nullable"] is True
    assert set(RUNTIME_FIELDS) <= set(document["components"]["schemas"]["Agent"]["required"])
