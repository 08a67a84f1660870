"""Signing in through the app as a browser would, against the tests' OpenID Connect
provider (``tests.support.oidc_provider``); the fixtures are in this package's conftest."""

from __future__ import annotations

import urllib.parse
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.support import oidc_provider

AUTH_SECRET = "s" * 40
BASE_URL = "http://127.0.0.1:8000"


def sign_in(
    visitor: FlaskClient, provider: oidc_provider.Provider, subject: str, next_path: str = ""
) -> str:
    """Sign ``subject`` in as a visitor would; where the callback sends the visitor."""
    query = f"?next={urllib.parse.quote(next_path)}" if next_path else ""
    started = visitor.get(f"/auth/sign-in/oidc{query}")
    assert started.status_code == 302, started.data
    location = str(started.headers["Location"])
    parameters = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
    assert parameters["code_challenge_method"] == ["S256"]
    assert parameters["redirect_uri"] == [f"{BASE_URL}/auth/callback/oidc"]
    assert "nonce" in parameters and "state" in parameters
    callback = urllib.parse.urlsplit(provider.authorize(location, subject))
    finished = visitor.get(f"{callback.path}?{callback.query}")
    assert finished.status_code == 303, finished.data
    return str(finished.headers["Location"])


def body(response: TestResponse) -> dict[str, Any]:
    found = response.json
    assert isinstance(found, dict), response.data
    return found


def signed_in(
    visitor: FlaskClient, provider: oidc_provider.Provider, subject: str
) -> dict[str, Any]:
    """Sign ``subject`` in as a visitor would; the session it now holds (see ``current``)."""
    sign_in(visitor, provider, subject)
    return current(visitor)


def current(visitor: FlaskClient) -> dict[str, Any]:
    answer = visitor.get("/v1/sessions/current")
    assert answer.status_code == 200, answer.json
    found: dict[str, Any] = body(answer)["data"]
    return found


def session_cookie(visitor: FlaskClient) -> str:
    cookie = visitor.get_cookie("occ_session")
    assert cookie is not None
    return cookie.value
