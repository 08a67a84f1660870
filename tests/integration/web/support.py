"""What the HTTP tests share: callers holding permissions, problem answers, the requests of a
collection's routes, neighbouring Namespaces."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flask.testing import FlaskClient

from occ.state import api_keys, audit
from occ.state.db import Database
from tests.integration.web.conftest import PEPPER, Caller, namespace
from tests.support import grants, rows
from tests.support.responses import json_of


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


Request = tuple[str, str, Any]
"""One request: the method, the path and the JSON body (``None`` for none)."""


def revoke(db: Database, who: Caller) -> None:
    """Revoke the caller's API key."""
    parsed = api_keys.parse(who.key)
    assert parsed is not None
    with db.transaction() as session:
        api_keys.revoke(session, parsed[0])


def revoked_caller(db: Database, *permissions: str, name: str = "someone") -> Caller:
    """A caller holding ``permissions`` whose API key has been revoked."""
    revoked = caller(db, *permissions, name=name)
    revoke(db, revoked)
    return revoked


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The problem details of an error answer, checked: status, code, request id, text."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    body = dict(json_of(response))
    assert body["code"] == code
    assert body["status"] == status
    assert body["requestId"] == response.headers["X-Request-Id"]
    assert isinstance(body["title"], str) and isinstance(body["detail"], str)
    return body


def problems(
    client: FlaskClient,
    requests: Iterable[Request],
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    """Send each request with ``headers``; every answer is the problem ``status`` ``code``."""
    for method, path, body in requests:
        problem(client.open(path, method=method, json=body, headers=headers), status, code)


def item_routes(item: str, patch_body: dict[str, Any] | None = None) -> list[Request]:
    """Read, patch (with ``patch_body``, when given) and delete ``item``."""
    patch: list[Request] = [] if patch_body is None else [("PATCH", item, patch_body)]
    return [("GET", item, None), *patch, ("DELETE", item, None)]


def routes(
    collection: str,
    item: str,
    create_body: dict[str, Any],
    patch_body: dict[str, Any] | None = None,
) -> list[Request]:
    """Every route of ``collection`` and its ``item``: list, create with ``create_body``, and
    the ``item_routes``."""
    return [
        ("GET", collection, None),
        ("POST", collection, create_body),
        *item_routes(item, patch_body),
    ]


def denials(db: Database) -> list[audit.AuditEvent]:
    """The authorization denials audited so far."""
    with db.transaction() as session:
        return audit.list_events(session, kind="authorization_denial")


@dataclass(frozen=True)
class Neighbours:
    """A member of Namespace ``ns`` holding ``ours``, and Namespace ``other`` holding ``theirs``
    (the created resources as the API answered them) in the collection at ``collection(ns)``."""

    ns: str
    other: str
    theirs: dict[str, Any]
    ours: dict[str, Any]
    member: Caller
    collection: Callable[[str], str]

    @property
    def their_item(self) -> str:
        return f"{self.collection(self.other)}/{self.theirs['id']}"

    def reaching_theirs(
        self, create_body: dict[str, Any], patch_body: dict[str, Any] | None = None
    ) -> list[Request]:
        """What a member of ``ns`` might try on ``theirs``: every route of ``other``'s collection
        and of ``theirs`` there, and ``theirs`` through ``ns``'s path."""
        return [
            *routes(self.collection(self.other), self.their_item, create_body, patch_body),
            *item_routes(f"{self.collection(self.ns)}/{self.theirs['id']}", patch_body),
        ]

    def kept_apart(
        self, client: FlaskClient, db: Database, admin: Caller
    ) -> list[audit.AuditEvent]:
        """The member lists only ``ours`` and ``theirs`` is intact; the denials audited."""
        listed = client.get(self.collection(self.ns), headers=self.member.headers)
        assert json_of(listed)["data"] == [self.ours]
        assert json_of(client.get(self.their_item, headers=admin.headers))["data"] == self.theirs
        return denials(db)


def neighbours(
    client: FlaskClient,
    db: Database,
    owner_db: Database,
    admin: Caller,
    ns: str,
    *,
    create: Callable[..., Any],
    collection: Callable[[str], str],
    permissions: Iterable[str],
) -> Neighbours:
    """Namespace ``team-b`` next to ``ns``, one resource ``create`` makes in each, and a member
    of ``ns`` holding ``permissions`` and ``namespace:read`` there."""
    other = namespace(client, owner_db, admin, "team-b")
    theirs = json_of(create(client, admin, other, name="theirs"))["data"]
    ours = json_of(create(client, admin, ns, name="ours"))["data"]
    member = caller(db, *permissions, "namespace:read", namespace_id=ns)
    return Neighbours(ns, other, theirs, ours, member, collection)


def walk(
    client: FlaskClient,
    path: str,
    caller: Caller,
    limit: int,
    field: str = "id",
    *,
    follow: tuple[str, str] = ("cursor", "nextCursor"),
) -> list[list[Any]]:
    """``field`` of every item of every page, to the end: each page's ``meta`` entry
    ``follow[1]`` is the next request's query parameter ``follow[0]``."""
    parameter, meta_key = follow
    pages: list[list[Any]] = []
    position: Any = None
    while True:
        query: dict[str, Any] = {"limit": limit}
        if position is not None:
            query[parameter] = position
        response = client.get(path, query_string=query, headers=caller.headers)
        assert response.status_code == 200, response.json
        assert len(json_of(response)["data"]) <= limit
        pages.append([item[field] for item in json_of(response)["data"]])
        position = json_of(response)["meta"][meta_key]
        if position is None:
            return pages


def kept_while_used(client: FlaskClient, admin: Caller, item: str, agent_id: str) -> None:
    """Deleting ``item`` is refused as a conflict naming the Agent using it; it stays."""
    response = client.delete(item, headers=admin.headers)
    problem(response, 409, "RESOURCE_CONFLICT")
    assert agent_id in json_of(response)["detail"]
    assert client.get(item, headers=admin.headers).status_code == 200


def refused_until_ready(
    client: FlaskClient, owner_db: Database, admin: Caller, create: Callable[[str], Any]
) -> str:
    """``create`` in a Namespace still provisioning, and in one being deleted, is refused as
    not ready; the provisioning Namespace's id."""
    young = namespace(client, owner_db, admin, "young", ready=False)
    problem(create(young), 409, "NAMESPACE_NOT_READY")
    ready = namespace(client, owner_db, admin, "ready")
    assert client.delete(f"/v1/namespaces/{ready}", headers=admin.headers).status_code == 202
    problem(create(ready), 409, "NAMESPACE_NOT_READY")
    return young
