"""The browser's credentials: the session cookie, its CSRF token, and the sign-in cookie that
carries a started sign-in to its callback.

The session cookie is host-only (no ``Domain``; native admin's ``OCC_AUTH_COOKIE_DOMAIN`` only
can widen it, then named ``__Secure-occ_session``), ``HttpOnly``, ``SameSite=Lax``, ``Path=/``
and ``Secure`` whenever ``OCC_AUTH_BASE_URL`` is https (then named ``__Host-occ_session``, a
name browsers accept only on such a cookie). Its value is the session token; the database
keeps only its keyed hash. The CSRF token is an HMAC of the session's id keyed with
``OCC_AUTH_SECRET``: a page of this origin can read it (``GET /v1/sessions/current``, or the
console's forms), a page of another origin cannot, and an unsafe request made with the cookie
must send it back (``X-CSRF-Token`` or the form field ``csrf_token``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Final

import flask
import itsdangerous

from occ.settings import sign_in
from occ.settings.config import Settings

SECURE_NAME: Final = "__Host-occ_session"
DOMAIN_NAME: Final = "__Secure-occ_session"
"""The name of a domain cookie (native admin's ``OCC_AUTH_COOKIE_DOMAIN``): ``__Host-`` forbids
a ``Domain``."""
PLAIN_NAME: Final = "occ_session"
SIGN_IN_NAME: Final = "occ_sign_in"
SIGN_IN_PATH: Final = "/auth/"
SIGN_IN_MAX_AGE_S: Final = 600
CSRF_HEADER: Final = "X-CSRF-Token"
CSRF_FIELD: Final = "csrf_token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def secure(settings: Settings) -> bool:
    """Whether the cookies are ``Secure`` (the base URL is https)."""
    return (settings.auth_base_url or "").startswith("https://")


def session_name(settings: Settings) -> str:
    """The session cookie's name."""
    if domain(settings) is not None:
        return DOMAIN_NAME
    return SECURE_NAME if secure(settings) else PLAIN_NAME


def domain(settings: Settings) -> str | None:
    """The session cookie's ``Domain``: native admin's ``OCC_AUTH_COOKIE_DOMAIN``, else none
    (host-only)."""
    return settings.auth_cookie_domain if sign_in.native_admin(settings) else None


def presented_session(settings: Settings) -> str | None:
    """The session token the request's cookie carries, if any."""
    return flask.request.cookies.get(session_name(settings)) or None


def set_session(response: flask.Response, settings: Settings, token: str) -> None:
    """Give the browser the session cookie (ending with the session's absolute timeout)."""
    response.set_cookie(
        session_name(settings),
        token,
        max_age=settings.auth_session_max_ms // 1000,
        path="/",
        domain=domain(settings),
        secure=secure(settings),
        httponly=True,
        samesite="Lax",
    )


def clear_session(response: flask.Response, settings: Settings) -> None:
    """Make the browser forget the session cookie."""
    response.delete_cookie(
        session_name(settings),
        path="/",
        domain=domain(settings),
        secure=secure(settings),
        httponly=True,
        samesite="Lax",
    )


def csrf_token(secret_key: str, session_id: str) -> str:
    """The CSRF token of a session."""
    return hmac.new(secret_key.encode(), f"csrf:{session_id}".encode(), hashlib.sha256).hexdigest()


def csrf_presented() -> str:
    """The CSRF token the request sent: its header, else its form field."""
    header = flask.request.headers.get(CSRF_HEADER)
    if header:
        return header
    if flask.request.mimetype == "application/x-www-form-urlencoded":
        return flask.request.form.get(CSRF_FIELD, "")
    return ""


def csrf_matches(secret_key: str, session_id: str, presented: str) -> bool:
    """Whether ``presented`` is the session's CSRF token (compared in constant time)."""
    return hmac.compare_digest(csrf_token(secret_key, session_id).encode(), presented.encode())


def _signer(secret_key: str) -> itsdangerous.URLSafeTimedSerializer:
    return itsdangerous.URLSafeTimedSerializer(secret_key, salt="occ-sign-in")


def set_sign_in(response: flask.Response, settings: Settings, pending: dict[str, Any]) -> None:
    """Keep a started sign-in (state, nonce, PKCE verifier, where to go next) in a signed,
    ten-minute cookie only the callback's path receives."""
    assert settings.auth_secret is not None
    response.set_cookie(
        SIGN_IN_NAME,
        _signer(settings.auth_secret).dumps(pending),
        max_age=SIGN_IN_MAX_AGE_S,
        path=SIGN_IN_PATH,
        secure=secure(settings),
        httponly=True,
        samesite="Lax",
    )


def pending_sign_in(settings: Settings) -> dict[str, Any] | None:
    """The started sign-in the request's cookie carries, if it is intact and fresh."""
    raw = flask.request.cookies.get(SIGN_IN_NAME)
    if not raw or settings.auth_secret is None:
        return None
    try:
        loaded = _signer(settings.auth_secret).loads(raw, max_age=SIGN_IN_MAX_AGE_S)
    except itsdangerous.BadData:
        return None
    return loaded if isinstance(loaded, dict) else None


def clear_sign_in(response: flask.Response, settings: Settings) -> None:
    """Forget the started sign-in."""
    response.delete_cookie(
        SIGN_IN_NAME, path=SIGN_IN_PATH, secure=secure(settings), httponly=True, samesite="Lax"
    )
