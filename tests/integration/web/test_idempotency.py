"""``Idempotency-Key`` on POST: a repeat replays the first answer without redoing anything."""

from __future__ import annotations

from typing import Any

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.controller import idempotency as idempotency_cases
from occ.controller import replays
from occ.foundation import errors
from occ.state import audit, idempotency, models
from occ.state.db import Database, Session
from tests.integration.web import support, test_agents, test_preconditions
from tests.integration.web.conftest import Caller
from tests.support import grants
from tests.support.responses import json_of


def keyed(caller: Caller, key: str) -> dict[str, str]:
    return {**caller.headers, "Idempotency-Key": key}


def records(db: Database) -> list[Any]:
    with db.transaction() as session:
        return list(session.execute(sa.select(models.IdempotencyKey)).scalars())


def test_a_repeated_deploy_replays_the_first_answer(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    test_agents.empower(db, agent)
    deploy = f"{world.agents}/{agent['id']}/deploy"

    first = client.post(deploy, headers=keyed(admin, "deploy-1"))
    assert first.status_code == 202, first.json
    again = client.post(deploy, headers=keyed(admin, "deploy-1"))
    assert again.status_code == 202
    assert again.json == first.json
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    revisions = client.get(f"{world.agents}/{agent['id']}/revisions", headers=admin.headers)
    assert len(json_of(revisions)["data"]) == 1  # nothing was done twice
    assert test_agents.count(db, models.AuditEvent, action="agents.deploy") == 1

    empty_object = client.post(deploy, json={}, headers=keyed(admin, "deploy-1"))
    assert empty_object.json == first.json  # an empty body counts as {}
    fresh = client.post(deploy, headers=keyed(admin, "deploy-2"))
    assert fresh.status_code == 202 and fresh.json != first.json
    assert (
        len(
            json_of(client.get(f"{world.agents}/{agent['id']}/revisions", headers=admin.headers))[
                "data"
            ]
        )
        == 2
    )


def test_another_body_with_the_same_key_is_refused(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    first = client.post("/v1/namespaces", json={"name": "one"}, headers=keyed(admin, "k"))
    assert first.status_code == 201, first.json
    reused = client.post("/v1/namespaces", json={"name": "two"}, headers=keyed(admin, "k"))
    assert reused.status_code == 409, reused.json
    assert reused.content_type == "application/problem+json"
    assert json_of(reused)["code"] == "IDEMPOTENCY_KEY_REUSED"
    names = [
        n["name"] for n in json_of(client.get("/v1/namespaces", headers=admin.headers))["data"]
    ]
    assert names == ["one"]
    # the same JSON spelt differently is the same request
    replay = client.post(
        "/v1/namespaces",
        data=b'{ "name" :\n "one" }',
        content_type="application/json",
        headers=keyed(admin, "k"),
    )
    assert replay.status_code == 201 and replay.json == first.json


def test_keys_are_per_caller_and_route(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    other = support.caller(db, "configuration:create", namespace_id=world.namespace_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    body = {"name": "c", "document": {"a": 1}}
    assert client.post(path, json=body, headers=keyed(admin, "same")).status_code == 201
    theirs = client.post(path, json={**body, "name": "d"}, headers=keyed(other, "same"))
    assert theirs.status_code == 201, theirs.json
    secret = client.post(
        f"/v1/namespaces/{world.namespace_id}/secrets",
        json={"name": "s", "value": "hunter2"},
        headers=keyed(admin, "same"),
    )
    assert secret.status_code == 201, secret.json
    stored = records(db)
    assert len(stored) == 3
    assert all("hunter2" not in str(r.response_body) + r.fingerprint for r in stored)


def test_a_failure_gives_the_key_back(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id, status="provisioning")
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    body = {"name": "c", "document": {"a": 1}}
    refused = client.post(path, json=body, headers=keyed(admin, "retry-me"))
    assert refused.status_code == 409 and json_of(refused)["code"] == "NAMESPACE_NOT_READY"
    assert records(db) == []
    with db.transaction() as session:
        session.execute(
            sa.update(models.Namespace)
            .where(models.Namespace.id == world.namespace_id)
            .values(status="ready")
        )
    created = client.post(path, json=body, headers=keyed(admin, "retry-me"))
    assert created.status_code == 201, created.json


def test_a_new_api_key_is_never_replayed(client: FlaskClient, admin: Caller, db: Database) -> None:
    path = f"/v1/principals/{admin.principal_id}/api-keys"
    minted = client.post(path, headers=keyed(admin, "mint"))
    assert minted.status_code == 201, minted.json
    repeat = client.post(path, headers=keyed(admin, "mint"))
    assert repeat.status_code == 409 and json_of(repeat)["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert json_of(minted)["data"]["key"] not in str([r.response_body for r in records(db)])


def test_a_malformed_key_is_refused(client: FlaskClient, admin: Caller) -> None:
    refused = client.post("/v1/namespaces", json={"name": "x"}, headers=keyed(admin, "a b"))
    assert refused.status_code == 400
    assert json_of(refused)["errors"][0]["pointer"] == "/headers/Idempotency-Key"
    assert json_of(client.get("/v1/namespaces", headers=admin.headers))["data"] == []


def test_a_change_whose_answer_was_lost_is_never_applied_again(
    client: FlaskClient,
    admin: Caller,
    db: Database,
    owner_db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    test_agents.empower(db, agent)
    deploy = f"{world.agents}/{agent['id']}/deploy"

    def crash(*args: Any, **kwargs: Any) -> None:
        raise errors.DependencyUnavailable("the process died after the commit")

    with monkeypatch.context() as patched:  # the answer is never stored
        patched.setattr(idempotency_cases, "record_answer", crash)
        first = client.post(deploy, headers=keyed(admin, "once"))
    assert first.status_code == 202, first.json
    [record] = records(db)
    assert record.response_status is None  # the change committed with its key

    busy = client.post(deploy, headers=keyed(admin, "once"))
    assert busy.status_code == 409 and json_of(busy)["code"] == "IDEMPOTENCY_KEY_IN_USE"
    with owner_db.transaction() as session:  # a while later the answer is known to be lost
        session.execute(
            sa.update(models.IdempotencyKey).values(
                created_at=sa.func.now() - idempotency.ABANDONED_AFTER * 2
            )
        )
    lost = client.post(deploy, headers=keyed(admin, "once"))
    assert lost.status_code == 409 and json_of(lost)["code"] == "IDEMPOTENCY_KEY_REUSED", lost.json
    assert test_agents.count(db, models.AuditEvent, action="agents.deploy") == 1

    with owner_db.transaction() as session:  # a day later the key is free again
        session.execute(
            sa.update(models.IdempotencyKey).values(
                created_at=sa.func.now() - idempotency.RETENTION - idempotency.ABANDONED_AFTER
            )
        )
    fresh = client.post(deploy, headers=keyed(admin, "once"))
    assert fresh.status_code == 202, fresh.json
    assert "Idempotent-Replayed" not in fresh.headers
    assert test_agents.count(db, models.AuditEvent, action="agents.deploy") == 2


def test_the_record_commits_with_the_change_or_not_at_all(
    client: FlaskClient, admin: Caller, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    seen: dict[str, int] = {}
    append = audit.append

    def fail_before_commit(session: Session, **event: Any) -> Any:
        if event.get("action") != "configurations.create":
            return append(session, **event)
        seen["inside"] = len(session.execute(sa.select(models.IdempotencyKey)).all())
        seen["outside"] = len(records(db))
        raise RuntimeError("the process fails after the change, before its commit")

    monkeypatch.setattr(audit, "append", fail_before_commit)
    failed = client.post(path, json={"name": "c", "document": {}}, headers=keyed(admin, "k"))
    assert failed.status_code == 500
    assert seen == {"inside": 1, "outside": 0}  # written by the change's own transaction
    assert records(db) == []
    assert test_agents.count(db, models.Configuration, name="c") == 0

    monkeypatch.setattr(audit, "append", append)
    created = client.post(path, json={"name": "c", "document": {}}, headers=keyed(admin, "k"))
    assert created.status_code == 201, created.json
    [record] = records(db)
    assert record.response_status == 201


def test_two_concurrent_requests_with_one_key_apply_once(
    app: flask.Flask, client: FlaskClient, admin: Caller, db: Database, owner_db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    body = {"name": "once", "document": {}}
    # both pass the look-up before the view (no record yet) and meet in their transactions
    answers = test_preconditions.racing(
        app,
        db,
        owner_db,
        "namespaces",
        world.namespace_id,
        [lambda c: c.post(path, json=body, headers=keyed(admin, "twin"))] * 2,
    )
    assert sorted(a.status_code for a in answers) == [201, 409], [a.json for a in answers]
    [refused] = [a for a in answers if a.status_code == 409]
    assert json_of(refused)["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert test_agents.count(db, models.Configuration, name="once") == 1
    [created] = [a for a in answers if a.status_code == 201]
    replay = client.post(path, json=body, headers=keyed(admin, "twin"))
    assert replay.json == created.json and replay.headers["Idempotent-Replayed"] == "true"


def test_a_replay_is_reauthorized(client: FlaskClient, admin: Caller, db: Database) -> None:
    """A repeat after the caller's role binding was revoked answers 403, not the stored 201;
    the refusal is audited and changes nothing."""
    world = test_agents.make_world(db, admin.principal_id)
    member = support.caller(db, name="member")
    binding = grants.give(
        db,
        member.principal_id,
        ["configuration:create", "configuration:read"],
        namespace_id=world.namespace_id,
    )
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    body = {"name": "c", "document": {"a": 1}}
    first = client.post(path, json=body, headers=keyed(member, "once"))
    assert first.status_code == 201, first.json
    again = client.post(path, json=body, headers=keyed(member, "once"))
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"

    revoked = client.delete(f"/v1/access-bindings/{binding.id}", headers=admin.headers)
    assert revoked.status_code in (200, 204), revoked.json
    refused = client.post(path, json=body, headers=keyed(member, "once"))
    document = support.problem(refused, 403, "FORBIDDEN")
    assert json_of(first)["data"]["id"] not in str(document)
    assert "Idempotent-Replayed" not in refused.headers
    denial = [e for e in support.denials(db) if e.action == replays.ACTION]
    assert len(denial) == 1 and denial[0].actor_id == member.principal_id
    assert denial[0].details["permission"] == "configuration:create"
    assert len(records(db)) == 1  # the record stays; nothing was written

    # a binding granted again lets the same repeat replay the same answer
    grants.give(db, member.principal_id, ["configuration:create"], namespace_id=world.namespace_id)
    restored = client.post(path, json=body, headers=keyed(member, "once"))
    assert restored.status_code == 201 and restored.json == first.json


def test_a_replay_with_a_revoked_key_is_unauthenticated(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    first = client.post("/v1/namespaces", json={"name": "one"}, headers=keyed(admin, "k"))
    assert first.status_code == 201, first.json
    support.revoke(db, admin)
    refused = client.post("/v1/namespaces", json={"name": "one"}, headers=keyed(admin, "k"))
    support.problem(refused, 401, "UNAUTHENTICATED")
    assert "Idempotent-Replayed" not in refused.headers


def test_a_replay_is_only_for_the_same_principal(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    """Another principal repeating the same request with the same key makes its own request: it
    never sees the first principal's answer."""
    world = test_agents.make_world(db, admin.principal_id)
    other = support.caller(db, "configuration:create", namespace_id=world.namespace_id)
    path = f"/v1/namespaces/{world.namespace_id}/configurations"
    body = {"name": "c", "document": {"a": 1}}
    first = client.post(path, json=body, headers=keyed(admin, "same"))
    assert first.status_code == 201, first.json
    theirs = client.post(path, json=body, headers=keyed(other, "same"))
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.status_code == 409, theirs.json  # the name is taken: a request of its own
    assert json_of(first)["data"]["id"] not in theirs.get_data(as_text=True)
