"""Who may call a route: every view declares its permission (or that it is public, or that
any signed-in caller may call it about itself); and who is calling.

The declaration is what the authorization-matrix test reads; the admission use case is what
enforces it, against the exact resource. A caller authenticates with a Bearer API key or, when
sign-in is configured, the session cookie or a Bearer CLI token (``occ login --browser``); an
unsafe request made with the cookie must carry the session's CSRF token
(``occ.web.cookies``). All reach the same IAM.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Final, TypeVar

import flask

from occ.controller import authentication
from occ.foundation import errors
from occ.web import cookies, rate_limits

View = TypeVar("View", bound=Callable[..., Any])

PUBLIC: Final = ("public",)
AUTHENTICATED: Final = ("authenticated",)
"""Any authenticated caller, about itself (its own sessions, the console's pages, which call
use cases that authorize each action)."""
_ATTRIBUTE: Final = "_occ_permissions"
CLI_TOKEN_PREFIX: Final = "ses_"  # noqa: S105 - a prefix, not a secret
"""How a Bearer CLI token (``occ login --browser``) starts; an API key starts ``occ_``."""


def requires(*permissions: str) -> Callable[[View], View]:
    """Declare the permissions a route needs (the first is the route's own)."""

    def declare(view: View) -> View:
        setattr(view, _ATTRIBUTE, permissions)
        return view

    return declare


def public(view: View) -> View:
    """Declare a route that needs no credentials."""
    setattr(view, _ATTRIBUTE, PUBLIC)
    return view


def declared(view: Callable[..., Any]) -> tuple[str, ...] | None:
    """What a view declared, or ``None`` when it declared nothing."""
    return getattr(view, _ATTRIBUTE, None)


def authenticated(view: View) -> View:
    """Declare a route any authenticated caller may call (about itself)."""
    setattr(view, _ATTRIBUTE, AUTHENTICATED)
    return view


def authenticate_request() -> None:
    """``before_request``: set ``g.principal_id`` from the Bearer key or the session cookie
    (unless the route is public)."""
    view = flask.current_app.view_functions.get(flask.request.endpoint or "")
    if view is None or declared(view) == PUBLIC:
        return
    rate_limits.refuse_exhausted_address()
    try:
        _authenticate()
    except errors.Unauthenticated:
        rate_limits.count_failed_authentication()
        raise


def _authenticate() -> None:
    context = flask.current_app.extensions["occ"]
    settings = context.runtime.settings
    header = flask.request.headers.get("Authorization", "")
    token = cookies.presented_session(settings) if settings.auth_secret else None
    if not header and token:
        _authenticate_cookie(context.runtime.database, settings, token)
        return
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise errors.Unauthenticated(
            "send an API key as 'Authorization: Bearer <key>'"
            + (" or sign in" if settings.sign_in_providers else "")
        )
    presented = presented.strip()
    if presented.startswith(CLI_TOKEN_PREFIX) and settings.auth_secret:
        flask.g.principal_id = authentication.authenticate_session(
            context.runtime.database,
            presented_token=presented,
            secret_key=settings.auth_secret,
            idle=dt.timedelta(milliseconds=settings.auth_cli_token_max_ms),
            cli=True,
        ).principal_id
        return
    flask.g.principal_id = authentication.authenticate(
        context.runtime.database, presented_key=presented, pepper=settings.api_key_pepper
    )


def _authenticate_cookie(database: Any, settings: Any, token: str) -> None:
    signed_in = authentication.authenticate_session(
        database,
        presented_token=token,
        secret_key=settings.auth_secret,
        idle=dt.timedelta(milliseconds=settings.auth_session_idle_ms),
    )
    flask.g.principal_id = signed_in.principal_id
    flask.g.session_id = signed_in.session_id
    if flask.request.method not in cookies.SAFE_METHODS and not cookies.csrf_matches(
        settings.auth_secret, signed_in.session_id, cookies.csrf_presented()
    ):
        raise errors.CsrfTokenInvalid(
            f"send the session's CSRF token in {cookies.CSRF_HEADER} with a request made with"
            " the session cookie"
        )


def session_id() -> str | None:
    """The session a cookie-authenticated request came with (``None`` for an API key)."""
    found = flask.g.get("session_id")
    return None if found is None else str(found)


def principal_id() -> str:
    """The authenticated caller."""
    return str(flask.g.principal_id)
