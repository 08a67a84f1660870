"""An Agent's ``harnessAuth`` of kind ``managedAccount`` over HTTP: checked on the draft, pinned
exactly by a deploy, refused to a caller without ``account:read``."""

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
from tests.integration.web.test_agents import World, body, empower, make_world
from tests.support import grants
from tests.support.responses import json_of


@pytest.fixture
def backend(tmp_path: Path) -> standin.StandinBackend:
    return standin.StandinBackend(tmp_path / "accounts")


@pytest.fixture
def app(db: Database, settings: Settings, tmp_path: Path) -> Iterator[flask.Flask]:
    selected = settings.replace(
        account_backend="standin", account_backend_root=str(tmp_path / "accounts")
    )
    with testing_app(selected) as application:
        yield application


@pytest.fixture
def world(db: Database, admin: Caller) -> World:
    return make_world(db, admin.principal_id)


@pytest.fixture
def account_id(client: FlaskClient, admin: Caller, world: World) -> str:
    issued = client.post(
        f"/v1/namespaces/{world.namespace_id}/accounts",
        json={"name": "codex", "workspace": "research"},
        headers=admin.headers,
    )
    assert issued.status_code == 201, issued.json
    return str(json_of(issued)["data"]["id"])


def managed(account_id: str) -> dict[str, Any]:
    return {"kind": "managedAccount", "accountId": account_id}


def _managed_agent(
    client: FlaskClient, db: Database, admin: Caller, world: World, account_id: str
) -> dict[str, Any]:
    """An Agent created on the managed account ``account_id`` (asserting the 201) whose service
    principal may read its Configuration: the runtime needs nothing on the account."""
    created = client.post(
        world.agents, json=body(world, harnessAuth=managed(account_id)), headers=admin.headers
    )
    assert created.status_code == 201, created.json
    agent: dict[str, Any] = json_of(created)["data"]
    empower(db, agent, "configuration:read")
    return agent


def test_an_agent_takes_a_managed_account_and_a_deploy_pins_it(
    client: FlaskClient,
    db: Database,
    admin: Caller,
    world: World,
    account_id: str,
    backend: standin.StandinBackend,
) -> None:
    agent = _managed_agent(client, db, admin, world, account_id)
    assert agent["harnessAuth"] == managed(account_id)

    deployed = client.post(f"{world.agents}/{agent['id']}/deploy", json={}, headers=admin.headers)
    assert deployed.status_code == 202, deployed.json
    revision_id = json_of(deployed)["data"]["deploymentId"]
    revision = json_of(
        client.get(f"{world.agents}/{agent['id']}/revisions/{revision_id}", headers=admin.headers)
    )["data"]
    assert revision["harnessAuth"] == managed(account_id)
    with db.transaction() as session:
        pinned = session.execute(
            sa.select(models.AgentRevision.harness_auth).where(
                models.AgentRevision.id == revision_id
            )
        ).scalar_one()
    assert pinned == {
        **managed(account_id),
        "tokenReference": backend.current_token(account_id),
        "backendId": backend.backend_id,
        "driver": "standin",
        "workspace": "research",
    }


@pytest.mark.parametrize(
    ("auth", "pointer"),
    [
        ({"kind": "managedAccount"}, "/harnessAuth/accountId"),
        ({"kind": "managedAccount", "accountId": "acc_x"}, "/harnessAuth/accountId"),
        ({"kind": "secret", "accountId": "{account}"}, "/harnessAuth/secretId"),
        (
            {"kind": "managedAccount", "accountId": "{account}", "secretId": "{secret}"},
            "/harnessAuth/secretId",
        ),
        ({"kind": "managedAccount", "accountId": "{unknown}"}, "/harnessAuth/accountId"),
    ],
)
def test_a_bad_managed_account_source_names_the_field_and_changes_nothing(
    client: FlaskClient,
    db: Database,
    admin: Caller,
    world: World,
    account_id: str,
    auth: dict[str, str],
    pointer: str,
) -> None:
    values = {"account": account_id, "secret": world.secret_id, "unknown": ids.new("account")}
    filled = {key: value.format(**values) for key, value in auth.items()}
    answer = problem(
        client.post(world.agents, json=body(world, harnessAuth=filled), headers=admin.headers),
        400,
        "INVALID_REQUEST",
    )
    assert pointer in [error["pointer"] for error in answer["errors"]]
    with db.transaction() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(models.Agent)).scalar() == 0


def test_a_withdrawn_account_is_refused_on_the_draft_and_on_deploy(
    client: FlaskClient,
    db: Database,
    admin: Caller,
    world: World,
    account_id: str,
    backend: standin.StandinBackend,
) -> None:
    agent = _managed_agent(client, db, admin, world, account_id)
    backend.withdraw(account_id)
    deployed = client.post(f"{world.agents}/{agent['id']}/deploy", json={}, headers=admin.headers)
    problem(deployed, 409, "RESOURCE_CONFLICT")

    with db.transaction() as session:
        session.execute(
            sa.update(models.Account)
            .where(models.Account.id == account_id)
            .values(withdrawn_at=sa.func.clock_timestamp())
        )
    second = client.post(
        world.agents,
        json=body(world, name="second", harnessAuth=managed(account_id)),
        headers=admin.headers,
    )
    answer = problem(second, 400, "INVALID_REQUEST")
    assert [error["pointer"] for error in answer["errors"]] == ["/harnessAuth/accountId"]


def test_deploying_needs_account_read_on_the_account(
    client: FlaskClient, db: Database, admin: Caller, world: World, account_id: str
) -> None:
    agent = _managed_agent(client, db, admin, world, account_id)
    deployer = caller(
        db, "agent:read", "agent:deploy", "configuration:read", namespace_id=world.namespace_id
    )
    path = f"{world.agents}/{agent['id']}/deploy"
    answer = problem(client.post(path, json={}, headers=deployer.headers), 403, "FORBIDDEN")
    assert "account:read" in answer["detail"]

    grants.give(
        db,
        deployer.principal_id,
        ["account:read"],
        **grants.exactly(world.namespace_id, "account", account_id),
    )
    assert client.post(path, json={}, headers=deployer.headers).status_code == 202
