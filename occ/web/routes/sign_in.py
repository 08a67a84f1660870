"""``/auth``: the browser's sign-in with a configured provider, and sign-out.

``GET /auth/sign-in/<provider>`` starts the authorization-code flow with PKCE and redirects
to the provider; ``GET /auth/callback/<provider>`` finishes it, starts a session (rotating the
one the browser held) and sets the session cookie; ``POST /auth/sign-out`` revokes the
session and clears the cookie. ``GET /auth/cli/sign-in/<provider>`` starts the same sign-in
for ``occ login --browser``, whose callback redirects to the CLI with a one-time code that
``POST /auth/cli/token`` trades for a CLI token (``occ.web.cli_sign_in``). These are browser
redirects, not part of the JSON API.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Final

import flask

from occ.controller import cli_sign_in as cli_cases
from occ.controller import sign_in
from occ.drivers.identity import oidc
from occ.foundation import errors
from occ.settings.config import Settings
from occ.web import access, calls, cli_sign_in, cookies, query_parameters

blueprint = flask.Blueprint("sign_in", __name__, url_prefix="/auth")

DEFAULT_NEXT: Final = "/console"


def clients() -> dict[str, oidc.Client]:
    """The configured providers' flows, by name."""
    found: dict[str, oidc.Client] = calls.context().sign_in
    return found


def _settings() -> Settings:
    return calls.context().runtime.settings


@blueprint.route("/providers", methods=["GET"])
@access.public
def providers() -> dict[str, Any]:
    """The providers a person may sign in with (name and label), in the page's order."""
    listed = [{"name": c.provider.name, "label": c.provider.label} for c in clients().values()]
    return {"data": listed}


@blueprint.route("/sign-in/<provider>", methods=["GET"])
@access.public
@query_parameters.accepts("next")
def start(provider: str) -> flask.Response:
    """Redirect to the provider; ``next`` is where to land afterwards (a path of this site)."""
    client = clients().get(provider)
    if client is None:
        raise errors.NotFound("no such sign-in provider")
    url, pending = client.begin()
    response = _redirect(url, 302)
    cookies.set_sign_in(
        response,
        _settings(),
        {**dataclasses.asdict(pending), "next": safe_next(flask.request.args.get("next"))},
    )
    return response


@blueprint.route("/callback/<provider>", methods=["GET"])
@access.public
@query_parameters.accepts()
def callback(provider: str) -> flask.Response:
    """Finish the sign-in: verify who signed in, start their session, set the cookie."""
    settings = _settings()
    client = clients().get(provider)
    if client is None:
        raise errors.NotFound("no such sign-in provider")
    kept = cookies.pending_sign_in(settings)
    if kept is None:
        raise errors.Unauthenticated("the sign-in expired or was not started here; start again")
    if flask.request.args.get("error"):
        raise errors.Unauthenticated("the identity provider did not sign you in")
    pending = oidc.Pending(
        provider=str(kept.get("provider")),
        state=str(kept.get("state")),
        nonce=str(kept.get("nonce")),
        verifier=str(kept.get("verifier")),
    )
    identity = client.finish(
        pending,
        state=flask.request.args.get("state", ""),
        code=flask.request.args.get("code", ""),
    )
    assert settings.auth_secret is not None  # sign-in is configured
    for_cli = kept.get("cli")
    if isinstance(for_cli, dict):
        return _finish_for_cli(identity, for_cli, settings.auth_secret)
    started = sign_in.sign_in(
        calls.context().runtime.database,
        sign_in.SignIn(
            issuer=identity.issuer,
            subject=identity.subject,
            display_name=identity.display_name,
            replaces=cookies.presented_session(settings),
        ),
        sign_in.SessionPolicy(
            secret_key=settings.auth_secret,
            lifetime=dt.timedelta(milliseconds=settings.auth_session_max_ms),
        ),
    )
    flask.g.principal_id = started.session.principal_id
    response = _redirect(safe_next(str(kept.get("next") or "")), 303)
    cookies.set_session(response, settings, started.token)
    cookies.clear_sign_in(response, settings)
    return response


@blueprint.route("/cli/sign-in/<provider>", methods=["GET"])
@access.public
@query_parameters.accepts("redirect_uri", "state", "code_challenge")
def cli_start(provider: str) -> flask.Response:
    """Start a sign-in for ``occ login --browser``: like ``/auth/sign-in``, but the callback
    sends the browser back to the CLI's loopback ``redirect_uri`` with a one-time code."""
    client = clients().get(provider)
    if client is None:
        raise errors.NotFound("no such sign-in provider")
    for_cli = cli_sign_in.request_of(flask.request.args)
    url, pending = client.begin()
    response = _redirect(url, 302)
    cookies.set_sign_in(
        response, _settings(), {**dataclasses.asdict(pending), "next": "", "cli": for_cli}
    )
    return response


@blueprint.route("/cli/token", methods=["POST"])
@access.public
def cli_token() -> tuple[dict[str, Any], int]:
    """Trade the code the CLI received, with its PKCE verifier, once, for a CLI token (a
    Bearer credential of the signed-in person, ``OCC_AUTH_CLI_TOKEN_MAX_MS`` long)."""
    settings = _settings()
    if settings.auth_secret is None:
        raise errors.NotFound("sign-in is not configured")
    body = flask.request.get_json(silent=True)
    if not isinstance(body, dict):
        raise errors.InvalidInput.at((), "must be a JSON object with code and codeVerifier")
    row_token = cli_sign_in.opened(settings.auth_secret, body.get("code"), body.get("codeVerifier"))
    started = cli_cases.redeem_code(
        calls.context().runtime.database,
        row_token,
        sign_in.SessionPolicy(
            secret_key=settings.auth_secret,
            lifetime=dt.timedelta(milliseconds=settings.auth_cli_token_max_ms),
        ),
    )
    flask.g.principal_id = started.session.principal_id
    found = started.session
    answer = {
        "token": started.token,
        "sessionId": found.id,
        "principalId": found.principal_id,
        "expiresAt": found.expires_at.isoformat(),
    }
    return {"data": answer}, 201


@blueprint.route("/one-time", methods=["GET"])
@access.public
@query_parameters.accepts("token")
def one_time() -> flask.Response:
    """Redeem a one-time sign-in link (``occ dev`` writes one for the bootstrap
    administrator): start a session, set the cookie, go to the console."""
    settings = _settings()
    if settings.auth_secret is None:
        raise errors.NotFound("sign-in is not configured")
    started = sign_in.redeem_one_time_link(
        calls.context().runtime.database,
        flask.request.args.get("token", ""),
        sign_in.SessionPolicy(
            secret_key=settings.auth_secret,
            lifetime=dt.timedelta(milliseconds=settings.auth_session_max_ms),
        ),
        replaces=cookies.presented_session(settings),
    )
    flask.g.principal_id = started.session.principal_id
    response = _redirect(DEFAULT_NEXT, 303)
    response.headers["Referrer-Policy"] = "no-referrer"
    cookies.set_session(response, settings, started.token)
    return response


@blueprint.route("/sign-out", methods=["POST"])
@access.public
def sign_out() -> flask.Response:
    """Revoke the cookie's session (with its CSRF token) and clear the cookie; 204."""
    settings = _settings()
    token = cookies.presented_session(settings) if settings.auth_secret else None
    response = flask.Response(status=204)
    if token is None or settings.auth_secret is None:
        return response
    parsed = sign_in.session_of(token)
    if parsed is not None and not cookies.csrf_matches(
        settings.auth_secret, parsed, cookies.csrf_presented()
    ):
        raise errors.CsrfTokenInvalid("send the session's CSRF token to sign out")
    sign_in.sign_out(calls.context().runtime.database, token=token, secret_key=settings.auth_secret)
    cookies.clear_session(response, settings)
    return response


def _finish_for_cli(
    identity: oidc.Identity, for_cli: dict[str, Any], secret_key: str
) -> flask.Response:
    """Issue the CLI's one-time code and send the browser to the CLI with it (no cookie)."""
    row_token = cli_cases.issue_code(
        calls.context().runtime.database,
        sign_in.SignIn(
            issuer=identity.issuer, subject=identity.subject, display_name=identity.display_name
        ),
        secret_key=secret_key,
    )
    response = _redirect(cli_sign_in.redirect_to_cli(secret_key, for_cli, row_token), 303)
    response.headers["Referrer-Policy"] = "no-referrer"
    cookies.clear_sign_in(response, _settings())
    return response


def _redirect(location: str, status: int) -> flask.Response:
    response = flask.Response(status=status)
    response.headers["Location"] = location
    return response


def safe_next(requested: str | None) -> str:
    """``requested`` if it is a path of this site (``/...``, never ``//host`` or a URL),
    else the console: the redirect after sign-in never leaves the site."""
    if (
        not requested
        or not requested.startswith("/")
        or requested.startswith("//")
        or "\\" in requested
        or any(ord(c) < 0x21 for c in requested)
    ):
        return DEFAULT_NEXT
    return requested
