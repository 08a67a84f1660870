"""``ETag`` on GET, ``If-Match`` on PATCH and DELETE (412 when stale, nothing changed)."""

from __future__ import annotations

from flask.testing import FlaskClient

from occ.db import Database
from tests.integration.web import test_agents
from tests.integration.web.conftest import Caller


def test_a_configuration_is_tagged_by_its_generation(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    world = test_agents.make_world(db, admin.principal_id)
    url = f"/v1/namespaces/{world.namespace_id}/configurations/{world.configuration_id}"
    first = client.get(url, headers=admin.headers)
    assert first.headers["ETag"] == f'"g{first.json["data"]["generation"]}"'

    stale = first.headers["ETag"]
    updated = client.patch(url, json={"name": "v2"}, headers={**admin.headers, "If-Match": stale})
    assert updated.status_code == 200, updated.json
    fresh = client.get(url, headers=admin.headers).headers["ETag"]
    assert fresh != stale

    refused = client.patch(url, json={"name": "v3"}, headers={**admin.headers, "If-Match": stale})
    assert refused.status_code == 412, refused.json
    assert refused.content_type == "application/problem+json"
    assert refused.json["code"] == "PRECONDITION_FAILED"
    assert client.get(url, headers=admin.headers).json["data"]["name"] == "v2"

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
    assert client.get(url, headers=admin.headers).json["data"]["name"] == "renamed"
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
    outsider = test_agents.caller(db)
    hidden = client.delete(url, headers={**outsider.headers, "If-Match": '"stale"'})
    assert hidden.status_code == 404, hidden.json
    stale = client.delete(url, headers={**admin.headers, "If-Match": '"stale"'})
    assert stale.status_code == 412
    assert client.get(url, headers=admin.headers).json["data"]["status"] == "ready"


def test_a_resource_without_a_validator_fails_a_precise_if_match(
    client: FlaskClient, admin: Caller
) -> None:
    minted = client.post(f"/v1/principals/{admin.principal_id}/api-keys", headers=admin.headers)
    url = minted.headers["Location"]
    refused = client.delete(url, headers={**admin.headers, "If-Match": '"g1"'})
    assert refused.status_code == 412
    assert client.delete(url, headers=admin.headers).status_code == 200
