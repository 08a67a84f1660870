"""What the HTTP tests share: callers holding permissions, ready Namespaces, problem answers."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.db import Database
from occ.state import api_keys
from tests.integration.web.conftest import PEPPER, Caller
from tests.support import grants, rows


def caller(
    db: Database, *permissions: str, namespace_id: str | None = None, name: str = "someone"
) -> Caller:
    """A new human principal with ``permissions`` (bound at ``namespace_id`` when given)."""
    with db.transaction() as session:
        principal_id = rows.principal(session, name=name)
        if permissions:
            grants.grant(session, principal_id, permissions, namespace_id=namespace_id)
        minted = api_keys.mint(session, principal_id=principal_id, pepper=PEPPER)
    return Caller(principal_id, minted.plaintext)


def namespace(
    client: FlaskClient, owner_db: Database, admin: Caller, name: str, *, ready: bool = True
) -> str:
    """A Namespace ``admin`` created over HTTP, made ``ready`` (as a worker would) unless not."""
    created = client.post("/v1/namespaces", json={"name": name}, headers=admin.headers)
    assert created.status_code == 201, created.json
    namespace_id = str(created.json["data"]["id"])
    if ready:
        with owner_db.transaction() as session:
            session.execute(
                sa.text("UPDATE occ.namespaces SET status = 'ready' WHERE id = :id"),
                {"id": namespace_id},
            )
    return namespace_id


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The problem details of an error answer, checked: status, code, request id, text."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    body = dict(response.json)
    assert body["code"] == code
    assert body["status"] == status
    assert body["requestId"] == response.headers["X-Request-Id"]
    assert isinstance(body["title"], str) and isinstance(body["detail"], str)
    return body
