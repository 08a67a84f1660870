"""``GET .../agents/<id>/logs``: authorized on the exact Agent, audited once, redacted, bounded,
streamed as text (the ``local`` driver's log files under the app's root)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from occ.foundation import fingerprints
from occ.settings.config import Settings
from occ.state import api_keys, audit
from occ.state.db import Database
from occ.web import log_follows
from tests.integration.web import support
from tests.integration.web.conftest import PEPPER, Caller
from tests.integration.web.test_agents import World, activate, create, empower, make_world
from tests.support import grants, rows
from tests.support.responses import json_of

SECRET = "sk-live-harness-credential-4242"


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    return settings.model_copy(update={"local_root": str(tmp_path / "local")})


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


@dataclasses.dataclass(frozen=True)
class Running:
    agent: dict[str, Any]
    revision_id: str
    path: str
    log: Path


@pytest.fixture
def running(
    client: FlaskClient, admin: Caller, world: World, db: Database, settings: Settings
) -> Running:
    secret = client.post(
        f"/v1/namespaces/{world.namespace_id}/secrets",
        json={"name": "harness-token", "value": SECRET},
        headers=admin.headers,
    )
    assert secret.status_code == 201, secret.json
    agent = create(
        client,
        admin,
        world,
        harnessAuth={"kind": "secret", "secretId": json_of(secret)["data"]["id"]},
    )
    empower(db, agent)
    path = f"{world.agents}/{agent['id']}"
    deployed = client.post(f"{path}/deploy", headers=admin.headers)
    assert deployed.status_code == 202, deployed.json
    revision_id = str(json_of(deployed)["data"]["deploymentId"])
    with db.transaction() as session:
        activate(session, agent["id"], revision_id)
    log = Path(settings.local_root) / "agents" / agent["id"] / "revisions" / revision_id
    log.mkdir(parents=True)
    key = fingerprints.revision_key(settings.credential_fingerprint_key, revision_id)
    lines = [f"line {n}" for n in range(1, 6)]
    lines += [f"token={SECRET} and again {SECRET}", f"key {key}"]
    (log / "gateway.log").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return Running(agent, revision_id, f"{path}/logs", log / "gateway.log")


def _reads(db: Database, agent_id: str) -> list[audit.AuditEvent]:
    with db.transaction() as session:
        events = audit.list_events(session, resource_id=agent_id, limit=100)
    return [
        event
        for event in events
        if event.action == "agents.read_logs" and event.kind == audit.EventKind.ACCESS
    ]


def test_the_administrator_reads_the_tail_redacted_and_audited_once(
    client: FlaskClient, admin: Caller, running: Running, db: Database
) -> None:
    response = client.get(running.path, headers=admin.headers)
    assert response.status_code == 200, response.data
    assert response.content_type == "text/plain; charset=utf-8"
    text = response.get_data(as_text=True)
    assert SECRET not in text
    assert text.splitlines() == [
        *(f"line {n}" for n in range(1, 6)),
        "token=[REDACTED] and again [REDACTED]",
        "key [REDACTED]",
    ]
    assert client.get(f"{running.path}?tail=2", headers=admin.headers).get_data(
        as_text=True
    ).splitlines() == ["token=[REDACTED] and again [REDACTED]", "key [REDACTED]"]
    [first, second] = _reads(db, running.agent["id"])
    assert first.kind == audit.EventKind.ACCESS
    assert first.details["revisionId"] == running.revision_id
    assert {first.details["tail"], second.details["tail"]} == {100, 2}
    assert SECRET not in repr(first.details)


def test_a_follow_streams_and_ends_when_the_client_leaves(
    client: FlaskClient, admin: Caller, running: Running
) -> None:
    response = client.get(
        f"{running.path}?tail=1&follow=true", headers=admin.headers, buffered=False
    )
    assert response.status_code == 200
    chunks = iter(response.response)
    assert next(chunks) == b"key [REDACTED]\n"
    with running.log.open("a", encoding="utf-8") as handle:
        handle.write(f"later {SECRET}\n")
    assert next(chunks) == b"later [REDACTED]\n"
    response.close()  # the client goes away: the reader is closed


def test_a_principal_holds_a_bounded_number_of_follows_at_once(
    client: FlaskClient, admin: Caller, running: Running
) -> None:
    follow = f"{running.path}?tail=1&follow=true"
    held = [
        client.get(follow, headers=admin.headers, buffered=False)
        for _ in range(log_follows.MAX_PER_PRINCIPAL)
    ]
    assert [response.status_code for response in held] == [200] * len(held)
    refused = client.get(follow, headers=admin.headers)
    support.problem(refused, 429, "RATE_LIMITED")
    assert refused.headers["Retry-After"] == str(log_follows.RETRY_AFTER_S)
    assert client.get(running.path, headers=admin.headers).status_code == 200  # a tail is no follow
    held.pop().close()  # one ends (never read: closed all the same)
    again = client.get(follow, headers=admin.headers, buffered=False)
    assert again.status_code == 200
    for response in [*held, again]:
        response.close()
    assert log_follows.held(admin.principal_id) == 0


@pytest.mark.parametrize(
    ("query", "pointer"),
    [
        ("tail=-1", "/query/tail"),
        ("tail=10001", "/query/tail"),
        ("tail=lots", "/query/tail"),
        ("since=yesterday", "/query/since"),
        ("since=2026-01-01T00:00:00", "/query/since"),
        ("since=99999999999h", "/query/since"),
        ("since=9000h", "/query/since"),
        ("follow=maybe", "/query/follow"),
        ("lines=3", "/query/lines"),
    ],
)
def test_bad_parameters_are_refused_with_a_pointer(
    client: FlaskClient, admin: Caller, running: Running, db: Database, query: str, pointer: str
) -> None:
    response = client.get(f"{running.path}?{query}", headers=admin.headers)
    assert response.status_code == 400, response.data
    problem = json_of(response)
    assert problem["code"] == "INVALID_REQUEST"
    assert [error["pointer"] for error in problem["errors"]] == [pointer]
    assert _reads(db, running.agent["id"]) == []


def test_since_accepts_a_duration_and_a_time(
    client: FlaskClient, admin: Caller, running: Running
) -> None:
    for since in ("10m", "1h30m", "2026-01-01T00:00:00Z"):
        response = client.get(f"{running.path}?since={since}", headers=admin.headers)
        assert response.status_code == 200, (since, response.data)


def test_callers_without_the_permission_are_refused_as_elsewhere(
    client: FlaskClient, admin: Caller, running: Running, db: Database
) -> None:
    namespace_id = running.agent["namespaceId"]
    reader = support.caller(db, "agent:read", namespace_id=namespace_id)
    refused = client.get(running.path, headers=reader.headers)
    assert refused.status_code == 403
    assert json_of(refused)["code"] == "FORBIDDEN"
    stranger = support.caller(db, "configuration:read", namespace_id=namespace_id)
    hidden = client.get(running.path, headers=stranger.headers)
    assert hidden.status_code == 404
    with db.transaction() as session:
        principal_id = rows.principal(session, name="log-reader")
        grants.grant(
            session,
            principal_id,
            ["agent:read", "agent:read_logs"],
            namespace_id=namespace_id,
            resource_kind="agent",
            resource_id=running.agent["id"],
        )
        minted = api_keys.mint(session, principal_id=principal_id, pepper=PEPPER)
    exact = Caller(principal_id, minted.plaintext)
    assert client.get(running.path, headers=exact.headers).status_code == 200
    # the runtime's own principal never reads logs
    runtime = client.post(
        f"/v1/namespaces/{namespace_id}/agents/{running.agent['id']}/runtime-access",
        headers=admin.headers,
    )
    assert runtime.status_code == 200, runtime.json
    role = json_of(runtime)["data"]["roleId"]
    roles = json_of(client.get(f"/v1/roles/{role}", headers=admin.headers))["data"]
    assert "agent:read_logs" not in roles["permissions"]
    assert len(_reads(db, running.agent["id"])) == 1  # the exact grant's read


def test_an_agent_that_is_not_running_is_a_conflict(
    client: FlaskClient, admin: Caller, world: World, db: Database
) -> None:
    agent = create(client, admin, world)
    response = client.get(f"{world.agents}/{agent['id']}/logs", headers=admin.headers)
    assert response.status_code == 409
    assert json_of(response)["code"] == "AGENT_NOT_RUNNING"


def test_a_running_agent_without_a_log_is_unavailable(
    client: FlaskClient, admin: Caller, running: Running
) -> None:
    running.log.unlink()
    response = client.get(running.path, headers=admin.headers)
    assert response.status_code == 409
    assert json_of(response)["code"] == "LOGS_UNAVAILABLE"
