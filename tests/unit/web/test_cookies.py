"""The session cookie's attributes: host-only unless native admin sets a cookie domain."""

from __future__ import annotations

import flask
import pytest

from occ.settings.config import Settings
from occ.web import cookies
from tests.unit.settings.support import production

PRODUCTION = production(OCC_AUTH_SECRET="s" * 40, OCC_AUTH_BASE_URL="https://occ.example.com")


def set_cookie(settings: Settings) -> str:
    response = flask.Response()
    with flask.Flask(__name__).test_request_context():
        cookies.set_session(response, settings, "the-token")
    return response.headers["Set-Cookie"]


@pytest.mark.parametrize("native", [{}, {"OCC_AUTH_NATIVE_ADMIN": "on"}])
def test_the_session_cookie_is_host_only_by_default(native: dict[str, str]) -> None:
    settings = Settings.from_env({**PRODUCTION, **native})

    header = set_cookie(settings)

    assert header.startswith("__Host-occ_session=the-token;")
    assert "Domain" not in header and "Secure" in header and "HttpOnly" in header


def test_native_admin_widens_the_cookie_to_its_domain() -> None:
    settings = Settings.from_env(
        {**PRODUCTION, "OCC_AUTH_NATIVE_ADMIN": "on", "OCC_AUTH_COOKIE_DOMAIN": "example.com"}
    )

    header = set_cookie(settings)

    assert cookies.session_name(settings) == "__Secure-occ_session"
    assert header.startswith("__Secure-occ_session=the-token;")
    assert "Domain=example.com" in header and "Secure" in header and "SameSite=Lax" in header
