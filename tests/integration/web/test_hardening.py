"""Hardened input over HTTP: media type, size, depth, strict JSON, names, request ids, and the
problem+json answers of the router itself (unknown route, wrong method).

Every rejected request changes nothing: the Namespace, work and audit rows are counted before
and after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.state import models
from occ.state.db import Database
from occ.web import app as web_app
from occ.web import json_input
from tests.integration.web.conftest import Caller
from tests.integration.web.support import problem
from tests.support.responses import json_of

JSON = "application/json"


@pytest.fixture
def unchanged(db: Database, admin: Caller) -> Iterator[None]:
    """Asserts, after the test, that no Namespace, work item or audit event was written."""
    before = counts(db)
    yield
    assert counts(db) == before


def counts(db: Database) -> tuple[int, int, int]:
    with db.transaction() as session:
        namespaces, work, audits = (
            int(session.scalar(sa.select(sa.func.count()).select_from(model)) or 0)
            for model in (models.Namespace, models.ControllerWork, models.AuditEvent)
        )
    return namespaces, work, audits


def post(
    client: FlaskClient,
    admin: Caller,
    body: bytes | str,
    *,
    content_type: str | None = JSON,
    path: str = "/v1/namespaces",
) -> Any:
    headers = dict(admin.headers)
    if content_type is not None:
        headers["Content-Type"] = content_type
    return client.post(path, data=body, headers=headers)


def nested(depth: int) -> str:
    """A value that is ``depth`` arrays deep (``[[...]]``)."""
    return "[" * depth + "]" * depth


# -- media type and size ------------------------------------------------------------------------


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", None]
)
def test_a_body_that_is_not_json_is_415(
    client: FlaskClient, admin: Caller, content_type: str | None
) -> None:
    response = post(client, admin, '{"name": "team-a"}', content_type=content_type)
    problem(response, 415, "UNSUPPORTED_MEDIA_TYPE")


@pytest.mark.usefixtures("unchanged")
def test_a_body_over_the_limit_is_413(client: FlaskClient, admin: Caller) -> None:
    body = json.dumps({"name": "a" * (web_app.MAX_BODY_BYTES + 1)})
    problem(post(client, admin, body), 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.usefixtures("unchanged")
def test_a_body_just_under_the_limit_is_parsed(client: FlaskClient, admin: Caller) -> None:
    body = json.dumps({"name": "a" * (web_app.MAX_BODY_BYTES - 100)})
    response = problem(post(client, admin, body), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == ["/name"]


# -- strict JSON --------------------------------------------------------------------------------


@pytest.mark.usefixtures("unchanged")
def test_nesting_deeper_than_the_limit_is_400(client: FlaskClient, admin: Caller) -> None:
    # the root object is level 0: 32 arrays inside it are the most it may hold
    deep = f'{{"name": "team-a", "extra": {nested(json_input.MAX_DEPTH + 1)}}}'
    response = problem(post(client, admin, deep), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == [""]
    assert "nesting" in response["errors"][0]["message"]
    very_deep = f'{{"name": "team-a", "extra": {nested(100_000)}}}'
    problem(post(client, admin, very_deep), 400, "INVALID_REQUEST")


@pytest.mark.usefixtures("unchanged")
def test_nesting_at_the_limit_reaches_the_schema(client: FlaskClient, admin: Caller) -> None:
    at_limit = f'{{"name": "team-a", "extra": {nested(json_input.MAX_DEPTH)}}}'
    response = problem(post(client, admin, at_limit), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == ["/extra"]  # unknown field, not depth


REJECTED_BODIES = {
    "nan": b'{"name": NaN}',
    "infinity": b'{"name": Infinity}',
    "negative infinity": b'{"name": -Infinity}',
    "duplicate keys": b'{"name": "team-a", "name": "team-b"}',
    "duplicate nested keys": b'{"name": "team-a", "x": {"k": 1, "k": 2}}',
    "lone surrogate": b'{"name": "team-\\ud800"}',
    "lone surrogate in a key": b'{"\\udc00": "team-a"}',
    "nul": b'{"name": "team-\\u0000a"}',
    "nul in a key": b'{"na\\u0000me": "team-a"}',
    "invalid utf-8": b'{"name": "team-\xff\xfe"}',
    "overlong utf-8": b'{"name": "\xc0\xaf"}',
    "utf-16": '{"name": "team-a"}'.encode("utf-16"),
    "top-level array": b'[{"name": "team-a"}]',
    "top-level string": b'"team-a"',
    "top-level number": b"42",
    "top-level null": b"null",
    "truncated": b'{"name": "team-a"',
    "trailing data": b'{"name": "team-a"} {}',
    "single quotes": b"{'name': 'team-a'}",
}


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("body", REJECTED_BODIES.values(), ids=REJECTED_BODIES.keys())
def test_strict_json_rejects(client: FlaskClient, admin: Caller, body: bytes) -> None:
    response = problem(post(client, admin, body), 400, "INVALID_REQUEST")
    assert response["errors"] and all("pointer" in e and "message" in e for e in response["errors"])


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(
    "body",
    [
        b'{"name": 1e999}',
        b'{"name": -1e999}',
        b'{"name": "team-a", "extra": 1e400}',
    ],
    ids=["overflow", "negative overflow", "overflow elsewhere"],
)
def test_numbers_that_overflow_to_infinity_are_rejected_as_json(
    client: FlaskClient, admin: Caller, body: bytes
) -> None:
    response = problem(post(client, admin, body), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == [""]


@pytest.mark.usefixtures("unchanged")
def test_an_integer_too_long_to_convert_is_400(client: FlaskClient, admin: Caller) -> None:
    body = b'{"name": "team-a", "extra": ' + b"1" * 5000 + b"}"
    problem(post(client, admin, body), 400, "INVALID_REQUEST")


@pytest.mark.usefixtures("unchanged")
def test_an_empty_object_reports_the_missing_name(client: FlaskClient, admin: Caller) -> None:
    response = problem(post(client, admin, b"{}"), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == ["/name"]


# -- names --------------------------------------------------------------------------------------

BAD_NAMES = {
    "empty": "",
    "leading space": " team-a",
    "trailing space": "team-a ",
    "trailing newline": "team-a\n",
    "tab inside": "team\ta",
    "newline inside": "team\na",
    "escape char": "team\x1ba",
    "delete char": "team\x7fa",
    "c1 control": "team\x85a",
    "201 chars": "a" * 201,
    "not a string": 42,
    "null": None,
    "object": {"first": "team"},
}


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_bad_names_point_at_name(client: FlaskClient, admin: Caller, name: Any) -> None:
    response = problem(post(client, admin, json.dumps({"name": name})), 400, "INVALID_REQUEST")
    assert [e["pointer"] for e in response["errors"]] == ["/name"]


def test_a_200_character_name_is_accepted(client: FlaskClient, admin: Caller) -> None:
    response = post(client, admin, json.dumps({"name": "a" * 200}))
    assert response.status_code == 201, response.json


# -- request ids and router answers -------------------------------------------------------------


def test_every_response_has_a_request_id(client: FlaskClient, admin: Caller) -> None:
    responses = [
        client.get("/healthz"),
        client.get("/v1/openapi.json"),
        client.get("/v1/namespaces", headers=admin.headers),
        client.get("/v1/namespaces"),
        post(client, admin, b"[]"),
        post(client, admin, b"{}", content_type="text/plain"),
        client.get("/v1/nothing-here"),
        client.put("/v1/namespaces", headers=admin.headers),
    ]
    seen = set()
    for response in responses:
        request_id = response.headers.get("X-Request-Id", "")
        assert request_id.startswith("req_"), response
        seen.add(request_id)
        if response.status_code >= 400:
            assert json_of(response)["requestId"] == request_id
    assert len(seen) == len(responses)


def test_a_well_formed_incoming_request_id_is_kept(client: FlaskClient) -> None:
    kept = client.get("/v1/nothing", headers={"X-Request-Id": "trace-42.a_b"})
    assert kept.headers["X-Request-Id"] == "trace-42.a_b" == json_of(kept)["requestId"]
    replaced = client.get("/v1/nothing", headers={"X-Request-Id": "bad id\twith junk"})
    assert replaced.headers["X-Request-Id"].startswith("req_")
    too_long = client.get("/v1/nothing", headers={"X-Request-Id": "a" * 65})
    assert too_long.headers["X-Request-Id"].startswith("req_")


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(
    "path", ["/v1/nothing-here", "/", "/v1", "/v2/namespaces", "/v1/namespaces/ns_1/nothing"]
)
def test_an_unknown_route_is_a_404_problem(client: FlaskClient, admin: Caller, path: str) -> None:
    problem(client.get(path), 404, "NOT_FOUND")
    problem(client.get(path, headers=admin.headers), 404, "NOT_FOUND")


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/v1/namespaces"),
        ("PATCH", "/v1/namespaces"),
        ("DELETE", "/v1/namespaces"),
        ("POST", "/v1/work"),
        ("DELETE", "/v1/audit-events"),
        ("POST", "/healthz"),
    ],
)
def test_a_wrong_method_is_a_405_problem(
    client: FlaskClient, admin: Caller, method: str, path: str
) -> None:
    response = client.open(path, method=method, headers=admin.headers, json={"name": "x"})
    problem(response, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in response.headers["Allow"]
    assert method not in response.headers["Allow"]
