"""Every route of the URL map declares its permission, and none lets a principal without it through.

For each route and each permission it declares, a principal holding every other permission
installation-wide sends a valid request: it must be refused (403, or 404 when it may not even
see the resource), or, for a list, see nothing; and the refusal changes nothing but the
denial audit.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ import iam
from occ.settings.config import Settings
from occ.state import api_keys, iam_policy, models
from occ.state import roles as role_rows
from occ.state.db import Database
from occ.web import access
from tests.integration.web.conftest import PEPPER, Caller, testing_app
from tests.support.responses import json_of

SKIPPED_METHODS = {"HEAD", "OPTIONS"}

BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/access-bindings"): {"roleId": "{role_id}", "principalId": "{principal_id}"},
    ("POST", "/v1/authorization-checks"): {
        "permission": "namespace:read",
        "resource": {"kind": "namespace", "id": "{namespace_id}"},
        "principalId": "{principal_id}",
    },
    ("POST", "/v1/namespaces"): {"name": "matrix-new"},
    ("POST", "/v1/namespaces/<namespace_id>/agents"): {
        "name": "second",
        "configurationId": "{configuration_id}",
        "harness": {"id": "openclaw", "version": "1.0.0"},
        "executionMode": "embedded",
        "harnessAuth": {"kind": "secret", "secretId": "{secret_id}"},
    },
    ("PATCH", "/v1/namespaces/<namespace_id>/quotas"): {"agents": 50},
    ("PATCH", "/v1/namespaces/<namespace_id>/agents/<agent_id>"): {"name": "renamed"},
    ("POST", "/v1/namespaces/<namespace_id>/agents/<agent_id>/deploy"): {},
    ("POST", "/v1/namespaces/<namespace_id>/agents/<agent_id>/runtime-access"): {},
    ("POST", "/v1/namespaces/<namespace_id>/agents/<agent_id>/stop"): {},
    ("POST", "/v1/namespaces/<namespace_id>/agents/<agent_id>/repair"): {},
    ("POST", "/v1/namespaces/<namespace_id>/accounts"): {"name": "m2", "workspace": "w"},
    ("POST", "/v1/namespaces/<namespace_id>/accounts/<account_id>/withdrawal"): {},
    ("POST", "/v1/namespaces/<namespace_id>/configurations"): {"name": "c2", "document": {}},
    ("PATCH", "/v1/namespaces/<namespace_id>/configurations/<configuration_id>"): {
        "document": {"changed": True}
    },
    ("POST", "/v1/namespaces/<namespace_id>/secrets"): {"name": "s2", "value": "v"},
    ("POST", "/v1/principals"): {"name": "p2", "kind": "service"},
    ("POST", "/v1/principals/<principal_id>/api-keys"): {},
    ("POST", "/v1/restrictions"): {"permission": "agent:use"},
    ("POST", "/v1/roles"): {"name": "r2", "permissions": ["namespace:read"]},
}


def _routes(app: flask.Flask) -> list[tuple[str, str, str]]:
    return sorted(
        (method, rule.rule, rule.endpoint)
        for rule in app.url_map.iter_rules()
        for method in rule.methods or ()
        if method not in SKIPPED_METHODS
    )


@pytest.fixture
def app(db: Database, settings: Settings, tmp_path: Path) -> Iterator[flask.Flask]:
    """The API with the stand-in account Backend, so that account routes have an account."""
    selected = settings.replace(account_backend="standin", account_backend_root=str(tmp_path))
    with testing_app(selected) as application:
        yield application


@pytest.fixture
def world(client: FlaskClient, admin: Caller, owner_db: Database, db: Database) -> dict[str, str]:
    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = client.post(path, json=body, headers=admin.headers)
        assert response.status_code in (200, 201, 202), (path, response.json)
        data: dict[str, Any] = json_of(response)["data"]
        return data

    namespace_id = post("/v1/namespaces", {"name": "matrix"})["id"]
    with owner_db.transaction() as session:
        session.execute(
            sa.update(models.Namespace)
            .values(status="ready")
            .where(models.Namespace.id == namespace_id)
        )
    base = f"/v1/namespaces/{namespace_id}"
    configuration_id = post(f"{base}/configurations", {"name": "c", "document": {}})["id"]
    secret_id = post(f"{base}/secrets", {"name": "s", "value": "x"})["id"]
    account_id = post(f"{base}/accounts", {"name": "m", "workspace": "w"})["id"]
    agent = post(
        f"{base}/agents",
        {
            "name": "a",
            "configurationId": configuration_id,
            "harness": {"id": "openclaw", "version": "1.0.0"},
            "executionMode": "embedded",
            "harnessAuth": {"kind": "secret", "secretId": secret_id},
        },
    )
    with db.transaction() as session:
        role = role_rows.create_role(
            session,
            name="sp",
            namespace_id=namespace_id,
            permissions=["configuration:read", "secret:operate"],
        )
        iam_policy.bind(
            session,
            role_id=role.id,
            principal_id=agent["servicePrincipalId"],
            created_by=admin.principal_id,
            namespace_id=namespace_id,
        )
    revision_id = post(f"{base}/agents/{agent['id']}/deploy", {})["deploymentId"]
    principal_id = post("/v1/principals", {"name": "p", "kind": "service"})["id"]
    key_id = post(f"/v1/principals/{principal_id}/api-keys", {})["id"]
    role_id = post("/v1/roles", {"name": "r", "permissions": ["namespace:read"]})["id"]
    binding_id = post("/v1/access-bindings", {"roleId": role_id, "principalId": principal_id})["id"]
    restriction_id = post("/v1/restrictions", {"permission": "agent:use"})["id"]
    return {
        "namespace_id": namespace_id,
        "configuration_id": configuration_id,
        "secret_id": secret_id,
        "account_id": account_id,
        "agent_id": agent["id"],
        "revision_id": revision_id,
        "deployment_id": revision_id,
        "principal_id": principal_id,
        "key_id": key_id,
        "role_id": role_id,
        "binding_id": binding_id,
        "restriction_id": restriction_id,
        "work_id": f"agent_revision:{revision_id}:reconcile",
    }


def _caller_without(db: Database, admin: Caller, permission: str, n: int) -> Caller:
    with db.transaction() as session:
        principal = iam_policy.create_principal(session, name=f"lacks-{n}", kind="human")
        role = role_rows.create_role(
            session,
            name=f"all but {permission} {n}",
            permissions=[p for p in iam.PERMISSIONS if p != permission],
        )
        iam_policy.bind(
            session, role_id=role.id, principal_id=principal.id, created_by=admin.principal_id
        )
        minted = api_keys.mint(session, principal_id=principal.id, pepper=PEPPER)
    return Caller(principal.id, minted.plaintext)


def _fill(value: Any, world: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**world)
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _footprint(db: Database) -> tuple[int, ...]:
    with db.transaction() as session:
        return tuple(
            session.execute(sa.select(sa.func.count()).select_from(model)).scalar_one()
            for model in (
                models.Namespace,
                models.Configuration,
                models.Secret,
                models.Account,
                models.Agent,
                models.AgentRevision,
                models.ControllerWork,
                models.Principal,
                models.ApiKey,
                models.Role,
                models.AccessBinding,
                models.Restriction,
            )
        ) + tuple(
            session.execute(
                sa.select(sa.func.count()).select_from(model).where(column.is_not(None))
            ).scalar_one()
            for model, column in (
                (models.ApiKey, models.ApiKey.revoked_at),
                (models.AccessBinding, models.AccessBinding.revoked_at),
                (models.Role, models.Role.deleted_at),
            )
        )


def test_every_route_declares_a_permission(app: flask.Flask) -> None:
    undeclared = [
        (method, rule)
        for method, rule, endpoint in _routes(app)
        if access.declared(app.view_functions[endpoint]) is None
    ]
    assert undeclared == []


def test_no_route_lets_a_principal_without_its_permission_through(
    app: flask.Flask,
    client: FlaskClient,
    admin: Caller,
    db: Database,
    world: dict[str, str],
) -> None:
    checked = 0
    for method, rule, endpoint in _routes(app):
        declared = access.declared(app.view_functions[endpoint])
        assert declared is not None
        if declared in (access.PUBLIC, access.AUTHENTICATED):
            continue  # no permission to take away (a caller's own sessions: test_sign_in)
        path = rule
        for name, value in world.items():
            path = path.replace(f"<{name}>", value)
        assert "<" not in path, f"no value for a parameter of {rule}"
        body = BODIES.get((method, rule))
        if method in {"POST", "PATCH"}:
            assert body is not None, f"add a valid sample body for {method} {rule}"
        for permission in declared:
            caller = _caller_without(db, admin, permission, checked)
            before = _footprint(db)
            response = client.open(
                path,
                method=method,
                headers=caller.headers,
                json=_fill(body, world) if body is not None else None,
            )
            label = f"{method} {rule} without {permission}"
            if (
                response.status_code == 200
                and method == "GET"
                and isinstance(json_of(response).get("data"), list)
            ):
                assert json_of(response)["data"] == [], label  # a list shows nothing
            else:
                assert response.status_code in (403, 404), (
                    label,
                    response.status_code,
                    response.json,
                )
            assert _footprint(db) == before, label
            checked += 1
    assert checked >= 45
