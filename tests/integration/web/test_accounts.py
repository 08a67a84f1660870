"""``/v1/namespaces/{ns}/accounts`` over HTTP: issued through the stand-in Backend, read with
``account:read``, never showing a token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.drivers.account import standin
from occ.foundation import ids
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.web.conftest import Caller, testing_app
from tests.integration.web.support import caller, problem
from tests.support import audits, grants
from tests.support.responses import json_of


def base(namespace_id: str) -> str:
    return f"/v1/namespaces/{namespace_id}/accounts"


@pytest.fixture
def backend_root(tmp_path: Path) -> Path:
    return tmp_path / "accounts"


@pytest.fixture
def app(db: Database, settings: Settings, backend_root: Path) -> Iterator[flask.Flask]:
    selected = settings.replace(account_backend="standin", account_backend_root=str(backend_root))
    with testing_app(selected) as application:
        yield application


def issue(client: FlaskClient, who: Caller, namespace_id: str, name: str = "codex") -> Any:
    body = {"name": name, "workspace": "research"}
    return client.post(base(namespace_id), json=body, headers=who.headers)


def test_issue_read_and_list_never_show_a_token(
    client: FlaskClient, db: Database, admin: Caller, ns: str, backend_root: Path
) -> None:
    created = issue(client, admin, ns)
    assert created.status_code == 201, created.json
    account = json_of(created)["data"]
    assert created.headers["Location"].endswith(f"{base(ns)}/{account['id']}")
    backend = standin.StandinBackend(backend_root)
    assert account == {
        "id": account["id"],
        "namespaceId": ns,
        "name": "codex",
        "backendId": backend.backend_id,
        "driver": "standin",
        "workspace": "research",
        "createdAt": account["createdAt"],
        "updatedAt": account["updatedAt"],
        "withdrawnAt": None,
    }
    reference = backend.current_token(account["id"])
    assert reference is not None
    token = backend.token_value(reference)

    read = client.get(f"{base(ns)}/{account['id']}", headers=admin.headers)
    listed = client.get(base(ns), headers=admin.headers)
    assert json_of(read)["data"] == account
    assert [item["id"] for item in json_of(listed)["data"]] == [account["id"]]
    issued = models.AuditEvent.action == "accounts.issue"
    assert audits.count(db, issued, models.AuditEvent.resource_id == account["id"]) == 1
    with db.transaction() as session:
        audited = session.execute(
            sa.select(sa.func.string_agg(models.AuditEvent.details.cast(sa.Text), " "))
        ).scalar_one()
    for text in (read.get_data(as_text=True), listed.get_data(as_text=True), audited):
        assert token not in text and reference not in text


def test_reading_needs_account_read(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    account_id = json_of(issue(client, admin, ns))["data"]["id"]
    item = f"{base(ns)}/{account_id}"
    outsider = caller(db, "namespace:read", "secret:read", namespace_id=ns)
    problem(client.get(item, headers=outsider.headers), 404, "NOT_FOUND")
    assert json_of(client.get(base(ns), headers=outsider.headers))["data"] == []

    exact = caller(db, name="exact")
    scope = grants.exactly(ns, "account", account_id)
    grants.give(db, exact.principal_id, ["account:read"], **scope)
    assert client.get(item, headers=exact.headers).status_code == 200
    listed = json_of(client.get(base(ns), headers=exact.headers))["data"]
    assert [each["id"] for each in listed] == [account_id]
    # reading is not issuing: that is the Installation administrator's
    problem(issue(client, exact, ns, name="second"), 403, "FORBIDDEN")


def test_bad_input_names_the_field_and_changes_nothing(
    client: FlaskClient, admin: Caller, ns: str, backend_root: Path
) -> None:
    for body, pointer in (
        ({"name": "x", "workspace": "no spaces"}, "/workspace"),
        ({"name": " padded", "workspace": "research"}, "/name"),
        ({"name": "x"}, "/workspace"),
    ):
        answer = problem(
            client.post(base(ns), json=body, headers=admin.headers), 400, "INVALID_REQUEST"
        )
        assert [error["pointer"] for error in answer["errors"]] == [pointer]
    assert json_of(client.get(base(ns), headers=admin.headers))["data"] == []
    assert not (backend_root / "accounts").exists() or not any(
        (backend_root / "accounts").iterdir()
    )


def test_a_taken_name_conflicts_before_the_backend_issues(
    client: FlaskClient, admin: Caller, ns: str, backend_root: Path
) -> None:
    assert issue(client, admin, ns).status_code == 201
    problem(issue(client, admin, ns), 409, "RESOURCE_CONFLICT")
    assert len(list((backend_root / "accounts").glob("*.json"))) == 1


def test_an_unknown_account_is_not_found(client: FlaskClient, admin: Caller, ns: str) -> None:
    for path in (f"{base(ns)}/{ids.new('account')}", f"{base(ns)}/not-an-id"):
        problem(client.get(path, headers=admin.headers), 404, "NOT_FOUND")


def test_without_a_backend_issuing_conflicts(
    db: Database, settings: Settings, admin: Caller
) -> None:
    with testing_app(settings) as application:
        client = application.test_client()
        created = client.post("/v1/namespaces", json={"name": "plain"}, headers=admin.headers)
        namespace_id = json_of(created)["data"]["id"]
        answer = client.post(
            base(namespace_id), json={"name": "x", "workspace": "w"}, headers=admin.headers
        )
        # the Namespace is still provisioning: readiness is checked before the Backend
        problem(answer, 409, "NAMESPACE_NOT_READY")


def test_a_withdrawal_is_recorded_only_once_the_backend_withdrew(
    client: FlaskClient, db: Database, admin: Caller, ns: str, backend_root: Path
) -> None:
    account_id = json_of(issue(client, admin, ns))["data"]["id"]
    path = f"{base(ns)}/{account_id}/withdrawal"
    problem(client.post(path, headers=admin.headers), 409, "RESOURCE_CONFLICT")
    reader = caller(db, "account:read", "namespace:read", namespace_id=ns)
    problem(client.post(path, headers=reader.headers), 403, "FORBIDDEN")

    standin.StandinBackend(backend_root).withdraw(account_id)
    recorded = client.post(path, json={}, headers=admin.headers)
    assert recorded.status_code == 200, recorded.json
    data = json_of(recorded)["data"]
    assert data["agentIds"] == [] and data["account"]["withdrawnAt"] is not None
    read = json_of(client.get(f"{base(ns)}/{account_id}", headers=admin.headers))["data"]
    assert read["withdrawnAt"] == data["account"]["withdrawnAt"]
    withdrawals = models.AuditEvent.action == "accounts.withdrawal"
    assert audits.count(db, withdrawals, models.AuditEvent.resource_id == account_id) == 1
