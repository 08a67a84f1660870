"""Requests are limited per client address and per principal, failed authentication per
address much harder, in Redis, shared by API processes: 429 problem+json with ``Retry-After``
and ``RateLimit-*`` headers (a failed-authentication refusal never looks at the key); every
counted response tells the tightest limit's remaining requests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import flask
import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import api_keys, iam_policy
from occ.state.db import Database
from occ.web.app import create_app
from tests.integration.web import support
from tests.integration.web.conftest import PEPPER, Caller
from tests.support import databases

LIMIT = 3


@pytest.fixture
def limited(database_urls: databases.DatabaseUrls) -> Iterator[list[flask.Flask]]:
    """Two API apps (as two processes would be) sharing the failed-authentication limit."""
    settings = Settings(
        database_url=database_urls.app,
        broker_url=os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        api_key_pepper=PEPPER,
        secret_key="test-secret-key",
        api_not_found_floor_ms=0,
        rate_limit_failed_auth=f"{LIMIT}/minute",
    )
    apps = [create_app(settings), create_app(settings)]
    for app in apps:
        app.testing = True
    yield apps


@pytest.fixture
def address() -> str:
    """A client address of this test alone (the limit is per address, in a shared Redis)."""
    return f"203.0.113.{uuid.uuid4().int % 250 + 1}-{uuid.uuid4().hex[:8]}"


def _get(client: FlaskClient, address: str, key: str) -> TestResponse:
    return client.get(
        "/v1/namespaces",
        headers={"Authorization": f"Bearer {key}"},
        environ_base={"REMOTE_ADDR": address},
    )


def test_failed_authentications_are_limited_across_processes(
    limited: list[flask.Flask], address: str, admin: Caller
) -> None:
    first, second = (app.test_client() for app in limited)
    guesses = [f"occ_{uuid.uuid4()}_{'0' * 64}" for _ in range(LIMIT)]
    for n, guess in enumerate(guesses):  # spread over both processes
        support.problem(_get((first, second)[n % 2], address, guess), 401, "UNAUTHENTICATED")
    refused = _get(second, address, admin.key)  # even the right key: the address is spent
    body = support.problem(refused, 429, "RATE_LIMITED")
    assert admin.key not in str(body)
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 61
    assert refused.headers["RateLimit-Limit"] == str(LIMIT)
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["RateLimit-Reset"] == str(retry_after)
    # another address is not limited by this one's failures
    assert _get(first, address + "-other", admin.key).status_code == 200


def test_successful_requests_do_not_count(
    limited: list[flask.Flask], address: str, admin: Caller
) -> None:
    client = limited[0].test_client()
    for _ in range(LIMIT * 3):
        assert _get(client, address, admin.key).status_code == 200


def test_an_unreachable_redis_refuses_nothing(
    database_urls: databases.DatabaseUrls, address: str, admin: Caller
) -> None:
    app = create_app(
        Settings(
            database_url=database_urls.app,
            api_key_pepper=PEPPER,
            secret_key="test-secret-key",
            rate_limit_failed_auth="1/minute",
            rate_limit_storage_url="redis://127.0.0.1:1/0",
        )
    )
    client = app.test_client()
    for _ in range(3):
        support.problem(_get(client, address, "occ_wrong"), 401, "UNAUTHENTICATED")
    assert _get(client, address, admin.key).status_code == 200


@pytest.mark.parametrize(
    "name", ["rate_limit_failed_auth", "rate_limit_per_principal", "rate_limit_per_address"]
)
def test_a_malformed_limit_is_refused_naming_the_setting(name: str) -> None:
    for value in ("20", "0/minute", "5/fortnight", ""):
        with pytest.raises(errors.InvalidSettings) as refused:
            Settings(**{name: value})
        assert refused.value.errors[0].pointer == f"/{name}"
    assert getattr(Settings(**{name: "off"}), name) == "off"


def _two_apps(settings: Settings) -> list[flask.Flask]:
    apps = [create_app(settings), create_app(settings)]
    for app in apps:
        app.testing = True
    return apps


def _refused_for(response: TestResponse, limit: int) -> None:
    support.problem(response, 429, "RATE_LIMITED")
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 61
    assert response.headers["RateLimit-Limit"] == str(limit)
    assert response.headers["RateLimit-Remaining"] == "0"
    assert response.headers["RateLimit-Reset"] == str(retry_after)


def test_requests_are_limited_per_principal_across_processes(
    settings: Settings, db: Database, admin: Caller, address: str
) -> None:
    apps = _two_apps(settings.replace(rate_limit_per_principal=f"{LIMIT}/minute"))
    first, second = (app.test_client() for app in apps)
    for n in range(LIMIT):  # spread over both processes, from different addresses
        assert _get((first, second)[n % 2], f"{address}-{n}", admin.key).status_code == 200
    _refused_for(_get(second, f"{address}-late", admin.key), LIMIT)
    # another principal (its own key) is not limited by this one's requests
    with db.transaction() as session:
        other = iam_policy.create_principal(
            session, name="other", kind=iam_policy.PrincipalKind.HUMAN
        )
        other_key = api_keys.mint(session, principal_id=other.id, pepper=PEPPER).plaintext
    assert _get(first, f"{address}-late", other_key).status_code == 200
    for app in apps:
        app.extensions["occ"].runtime.database.dispose()


def test_requests_are_limited_per_address_with_or_without_credentials(
    settings: Settings, admin: Caller, address: str
) -> None:
    apps = _two_apps(settings.replace(rate_limit_per_address=f"{LIMIT}/minute"))
    first, second = (app.test_client() for app in apps)
    anonymous = first.get("/v1/openapi.json", environ_base={"REMOTE_ADDR": address})
    assert anonymous.status_code == 200
    for _ in range(LIMIT * 2):  # probes and scrapes are not counted
        assert second.get("/healthz", environ_base={"REMOTE_ADDR": address}).status_code == 200
        scraped = second.get(
            "/metrics", headers=admin.headers, environ_base={"REMOTE_ADDR": address}
        )
        assert scraped.status_code == 200
    for _ in range(LIMIT - 1):
        assert _get(second, address, admin.key).status_code == 200
    _refused_for(_get(first, address, admin.key), LIMIT)
    _refused_for(first.get("/v1/openapi.json", environ_base={"REMOTE_ADDR": address}), LIMIT)
    assert _get(first, address + "-other", admin.key).status_code == 200
    for app in apps:
        app.extensions["occ"].runtime.database.dispose()


def test_counted_responses_tell_the_tightest_limits_remaining_requests(
    settings: Settings, admin: Caller, address: str
) -> None:
    per_address, per_principal = LIMIT + 2, LIMIT
    (app,) = _two_apps(
        settings.replace(
            rate_limit_per_address=f"{per_address}/minute",
            rate_limit_per_principal=f"{per_principal}/minute",
        )
    )[:1]
    client = app.test_client()
    anonymous = client.get("/v1/openapi.json", environ_base={"REMOTE_ADDR": address})
    assert anonymous.status_code == 200  # only the address limit counts it
    _tells(anonymous, per_address, per_address - 1)
    for n in range(per_principal):  # the principal's limit is now the tighter one
        response = _get(client, address, admin.key)
        assert response.status_code == 200
        _tells(response, per_principal, per_principal - n - 1)
    _refused_for(_get(client, address, admin.key), per_principal)
    probe = client.get("/healthz", environ_base={"REMOTE_ADDR": address})
    assert "RateLimit-Limit" not in probe.headers  # never counted, so never told
    app.extensions["occ"].runtime.database.dispose()


def test_no_limit_no_headers(settings: Settings, admin: Caller, address: str) -> None:
    (app,) = _two_apps(
        settings.replace(rate_limit_per_address="off", rate_limit_per_principal="off")
    )[:1]
    response = _get(app.test_client(), address, admin.key)
    assert response.status_code == 200
    assert not [name for name, _ in response.headers.items() if name.startswith("RateLimit")]
    app.extensions["occ"].runtime.database.dispose()


def _tells(response: TestResponse, limit: int, remaining: int) -> None:
    assert response.headers["RateLimit-Limit"] == str(limit)
    assert response.headers["RateLimit-Remaining"] == str(remaining)
    assert 1 <= int(response.headers["RateLimit-Reset"]) <= 60
