"""Fixtures for the HTTP API: an app on the test database, a client, an administrator's key,
a ready Namespace."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import flask
import pytest
from flask.testing import FlaskClient

from occ.controller import installation
from occ.settings.config import Settings
from occ.state import api_keys
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import nudge
from occ.web.app import create_app
from tests.integration.web import signing
from tests.support import databases, namespace_status, oidc_provider
from tests.support.responses import json_of

PEPPER = "test-pepper"


@pytest.fixture
def settings(database_urls: databases.DatabaseUrls) -> Settings:
    return Settings(
        database_url=database_urls.app,
        broker_url=os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        api_key_pepper=PEPPER,
        secret_key="test-secret-key",
        # no floor under 404s here (tests/integration/web/test_hardening.py checks it)
        api_not_found_floor_ms=0,
        # every test client comes from 127.0.0.1: tests of the limit set their own
        rate_limit_failed_auth="off",
        rate_limit_per_principal="off",
        rate_limit_per_address="off",
    )


@contextlib.contextmanager
def testing_app(settings: Settings) -> Iterator[flask.Flask]:
    """The API of ``settings`` in testing mode; its database engine is disposed of at the end."""
    application = create_app(settings)
    application.testing = True
    try:
        yield application
    finally:
        application.extensions["occ"].runtime.database.dispose()


@pytest.fixture
def app(db: Database, settings: Settings) -> Iterator[flask.Flask]:
    with testing_app(settings) as application:
        yield application


@pytest.fixture
def client(app: flask.Flask) -> FlaskClient:
    return app.test_client()


@dataclass(frozen=True)
class Caller:
    principal_id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def admin(db: Database) -> Caller:
    boot = installation.bootstrap_installation(db, name="test", admin_name="admin")
    assert boot.admin_principal_id is not None
    with db.transaction() as session:
        minted = api_keys.mint(session, principal_id=boot.admin_principal_id, pepper=PEPPER)
    return Caller(boot.admin_principal_id, minted.plaintext)


def namespace(
    client: FlaskClient, owner_db: Database, admin: Caller, name: str, *, ready: bool = True
) -> str:
    """A Namespace ``admin`` created over HTTP, made ``ready`` (as a worker would) unless not."""
    created = client.post("/v1/namespaces", json={"name": name}, headers=admin.headers)
    assert created.status_code == 201, created.json
    namespace_id = str(json_of(created)["data"]["id"])
    if ready:
        namespace_status.set_status(owner_db, namespace_id)
    return namespace_id


@pytest.fixture
def ns(client: FlaskClient, owner_db: Database, admin: Caller) -> str:
    """A ready Namespace ``team-a``."""
    return namespace(client, owner_db, admin, "team-a")


@pytest.fixture
def unreachable_broker_nudger() -> nudge.Nudger:
    """A nudger whose broker refuses connections (nothing listens on port 1)."""
    return nudge.Nudger(tasks_app.create(Settings(broker_url="redis://127.0.0.1:1/0")))


@pytest.fixture(scope="module")
def provider() -> Iterator[oidc_provider.Provider]:
    with oidc_provider.running() as running:
        yield running


@pytest.fixture
def signin_app(
    db: Database, settings: Settings, provider: oidc_provider.Provider
) -> Iterator[flask.Flask]:
    signing_in = settings.replace(
        auth_secret=signing.AUTH_SECRET,
        auth_base_url=signing.BASE_URL,
        auth_oidc_discovery_url=provider.discovery_url,
        auth_oidc_client_id=oidc_provider.CLIENT_ID,
        auth_oidc_client_secret=oidc_provider.CLIENT_SECRET,
    )
    with testing_app(signing_in) as application:
        yield application


@pytest.fixture
def visitor(signin_app: flask.Flask) -> FlaskClient:
    return signin_app.test_client()
