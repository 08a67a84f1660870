"""``ETag`` on GET, ``If-Match`` on PATCH and DELETE (412 when stale, nothing changed)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from occ.state import models
from occ.state.db import Database
from tests.integration.web import support, test_agents
from tests.integration.web.conftest import Caller
from tests.support import locks, processes
from tests.support.responses import json_of


def renaming(url: str, headers: dict[str, str], name: str) -> Callable[[FlaskClient], TestResponse]:
    """A request renaming the item at ``url`` to ``name``, to race against another."""
    return lambda c: c.patch(url, json={"name": name}, headers=headers)


def racing(
    app: flask.Flask,
    db: Database,
    owner_db: Database,
    locked: str,
    row_id: str,
    requests: list[Callable[[FlaskClient], TestResponse]],
) -> list[TestResponse]:
    """The answers of the requests, sent while a second connection holds ``locked``'s row:
    each starts once the one before waits on a lock inside its transaction (past any check
    made before it), and the row is released once all of them wait."""
    answers: dict[int, TestResponse] = {}
    holder = db.engine.connect()
    threads: list[threading.Thread] = []
    try:
        transaction = holder.begin()
        holder.execute(
            sa.text(f"SELECT 1 FROM occ.{locked} WHERE id = :id FOR UPDATE"), {"id": row_id}
        )
        for index, send in enumerate(requests):

            def run(index: int = index, send: Callable[[FlaskClient], TestResponse] = send) -> None:
                answers[index] = send(app.test_client())

            threads.append(threading.Thread(target=run))
            threads[-1].start()

            def waiting(index: int = index) -> bool:
                return locks.waiters(owner_db) > index

            processes.wait_for(
                waiting,
                timeout=20,
                message=f"request {index} waiting on a row lock",
            )
        transaction.commit()
    finally:
        holder.close()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(answers) == list(range(len(requests)))
    return [answers[index] for index in range(len(requests))]


def test_a_configuration_is_tagged_by_its_generation(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    url = f"/v1/namespaces/{world.namespace_id}/configurations/{world.configuration_id}"
    first = client.get(url, headers=admin.headers)
    assert first.headers["ETag"] == f'"g{json_of(first)["data"]["generation"]}"'

    stale = first.headers["ETag"]
    updated = client.patch(url, json={"name": "v2"}, headers={**admin.headers, "If-Match": stale})
    assert updated.status_code == 200, updated.json
    fresh = client.get(url, headers=admin.headers).headers["ETag"]
    assert fresh != stale

    refused = client.patch(url, json={"name": "v3"}, headers={**admin.headers, "If-Match": stale})
    assert refused.status_code == 412, refused.json
    assert refused.content_type == "application/problem+json"
    assert json_of(refused)["code"] == "PRECONDITION_FAILED"
    assert json_of(client.get(url, headers=admin.headers))["data"]["name"] == "v2"

    deleted_stale = client.delete(url, headers={**admin.headers, "If-Match": stale})
    assert deleted_stale.status_code == 412
    assert client.get(url, headers=admin.headers).status_code == 200
    deleted = client.delete(url, headers={**admin.headers, "If-Match": f'"x", {fresh}'})
    assert deleted.status_code == 204
    assert client.get(url, headers=admin.headers).status_code == 404


def test_agents_are_tagged_by_updated_at(client: FlaskClient, admin: Caller, db: Database) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    url = f"{world.agents}/{agent['id']}"
    tag = client.get(url, headers=admin.headers).headers["ETag"]
    assert tag.startswith('"u') and tag == client.get(url, headers=admin.headers).headers["ETag"]
    renamed = client.patch(
        url, json={"name": "renamed"}, headers={**admin.headers, "If-Match": tag}
    )
    assert renamed.status_code == 200, renamed.json
    again = client.patch(url, json={"name": "again"}, headers={**admin.headers, "If-Match": tag})
    assert again.status_code == 412
    assert json_of(client.get(url, headers=admin.headers))["data"]["name"] == "renamed"
    # no If-Match: the change goes through as before; "*" matches any current representation
    assert client.patch(url, json={"name": "free"}, headers=admin.headers).status_code == 200
    star = client.patch(url, json={"name": "star"}, headers={**admin.headers, "If-Match": "*"})
    assert star.status_code == 200


def test_namespaces_are_tagged_and_hidden_ones_stay_hidden(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    url = f"/v1/namespaces/{world.namespace_id}"
    tag = client.get(url, headers=admin.headers).headers["ETag"]
    assert tag.startswith('"u')
    outsider = support.caller(db)
    hidden = client.delete(url, headers={**outsider.headers, "If-Match": '"stale"'})
    assert hidden.status_code == 404, hidden.json
    stale = client.delete(url, headers={**admin.headers, "If-Match": '"stale"'})
    assert stale.status_code == 412
    assert json_of(client.get(url, headers=admin.headers))["data"]["status"] == "ready"


def test_a_resource_without_a_validator_fails_a_precise_if_match(
    client: FlaskClient, admin: Caller
) -> None:
    minted = client.post(f"/v1/principals/{admin.principal_id}/api-keys", headers=admin.headers)
    url = minted.headers["Location"]
    refused = client.delete(url, headers={**admin.headers, "If-Match": '"g1"'})
    assert refused.status_code == 412
    assert client.delete(url, headers=admin.headers).status_code == 200


def test_two_patches_racing_with_one_tag_change_it_once(
    app: flask.Flask, client: FlaskClient, admin: Caller, db: Database, owner_db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    url = f"/v1/namespaces/{world.namespace_id}/configurations/{world.configuration_id}"
    tag = client.get(url, headers=admin.headers).headers["ETag"]
    headers = {**admin.headers, "If-Match": tag}

    answers = racing(
        app,
        db,
        owner_db,
        "configurations",
        world.configuration_id,
        [renaming(url, headers, name) for name in ("left", "right")],
    )
    assert sorted(a.status_code for a in answers) == [200, 412], [a.json for a in answers]
    [won] = [a for a in answers if a.status_code == 200]
    [lost] = [a for a in answers if a.status_code == 412]
    assert json_of(lost)["code"] == "PRECONDITION_FAILED"
    current = json_of(client.get(url, headers=admin.headers))["data"]
    assert current["name"] == json_of(won)["data"]["name"]
    assert current["generation"] == 2  # moved exactly once
    assert (
        test_agents.count(db, models.AuditEvent, action="configurations.update", outcome="success")
        == 1
    )


def test_a_delete_racing_a_patch_with_one_tag_fails_and_deletes_nothing(
    app: flask.Flask, client: FlaskClient, admin: Caller, db: Database, owner_db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    agent = test_agents.create(client, admin, world)
    url = f"{world.agents}/{agent['id']}"
    tagged = {**admin.headers, "If-Match": client.get(url, headers=admin.headers).headers["ETag"]}

    renamed, deleted = racing(
        app,
        db,
        owner_db,
        "agents",
        agent["id"],
        [
            lambda c: c.patch(url, json={"name": "renamed"}, headers=tagged),
            lambda c: c.delete(url, headers=tagged),
        ],
    )
    assert renamed.status_code == 200, renamed.json
    assert deleted.status_code == 412, deleted.json
    assert json_of(deleted)["code"] == "PRECONDITION_FAILED"
    current = json_of(client.get(url, headers=admin.headers))["data"]
    assert current["name"] == "renamed" and current["status"] != "deleting"
    assert test_agents.count(db, models.AuditEvent, action="agents.delete") == 0


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("DELETE", "/v1/installation", 405),
        ("DELETE", "/v1/namespaces", 405),
        ("PATCH", "/healthz", 405),
        ("PATCH", "/v1/nope", 404),
    ],
)
def test_if_match_on_a_request_routing_refuses_leaves_it_to_its_404_or_405(
    client: FlaskClient, method: str, path: str, status: int
) -> None:
    # no credentials: the refusal comes before anything reads who is asking
    response = client.open(path, method=method, headers={"If-Match": '"x"'})
    assert response.status_code == status, response.get_data(as_text=True)
