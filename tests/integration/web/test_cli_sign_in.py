"""``occ login --browser``'s server side through the Flask app, against a real OpenID Connect
provider: the loopback redirect with its one-time code, the PKCE-checked trade for a CLI
token, and what the token may and may not do."""

from __future__ import annotations

import urllib.parse

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.state import audit, models
from occ.state.db import Database
from occ.web import cli_sign_in
from tests.integration.web.conftest import Caller
from tests.integration.web.signing import body, current, session_cookie, sign_in
from tests.integration.web.support import problem
from tests.support import oidc_provider

REDIRECT = "http://127.0.0.1:45678/callback"
STATE = "state-of-the-cli-0123456789"
VERIFIER = "v" * 43 + "-verifier-of-the-cli"


def started_for_cli(
    visitor: FlaskClient, provider: oidc_provider.Provider, subject: str, verifier: str = VERIFIER
) -> str:
    """Sign ``subject`` in for a CLI as its browser would; the code the CLI receives."""
    query = urllib.parse.urlencode(
        {
            "redirect_uri": REDIRECT,
            "state": STATE,
            "code_challenge": cli_sign_in.challenge_of(verifier),
        }
    )
    started = visitor.get(f"/auth/cli/sign-in/oidc?{query}")
    assert started.status_code == 302, started.data
    callback = urllib.parse.urlsplit(provider.authorize(str(started.headers["Location"]), subject))
    finished = visitor.get(f"{callback.path}?{callback.query}")
    assert finished.status_code == 303, finished.data
    back = urllib.parse.urlsplit(str(finished.headers["Location"]))
    assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT
    assert finished.headers["Referrer-Policy"] == "no-referrer"
    assert visitor.get_cookie("occ_session") is None  # the browser gets no session
    parameters = urllib.parse.parse_qs(back.query)
    assert parameters["state"] == [STATE]
    [code] = parameters["code"]
    return code


def traded(visitor: FlaskClient, code: str, verifier: str = VERIFIER) -> dict[str, str]:
    answer = visitor.post("/auth/cli/token", json={"code": code, "codeVerifier": verifier})
    assert answer.status_code == 201, answer.json
    found: dict[str, str] = body(answer)["data"]
    return found


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_cli_signs_in_and_its_token_is_a_listed_revocable_session(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database
) -> None:
    provider.set_user("ivy-sub", name="Ivy")
    code = started_for_cli(visitor, provider, "ivy-sub")

    minted = traded(visitor, code)

    assert minted["token"].startswith(f"{minted['sessionId']}.")
    listed = body(visitor.get("/v1/sessions", headers=bearer(minted["token"])))["data"]
    [mine] = [s for s in listed if s["id"] == minted["sessionId"]]
    assert (mine["issuer"], mine["principalId"]) == ("occ:cli", minted["principalId"])
    # the code is spent: a second trade is refused
    again = visitor.post("/auth/cli/token", json={"code": code, "codeVerifier": VERIFIER})
    problem(again, 401, "UNAUTHENTICATED")
    with db.transaction() as session:
        events = audit.list_events(session)
        principal = session.execute(
            sa.select(models.Principal).where(models.Principal.id == minted["principalId"])
        ).scalar_one()
    assert (principal.name, principal.kind) == ("Ivy", "human")
    actions = {e.action for e in events}
    assert {"principals.link", "sessions.issue_link", "sessions.create"} <= actions
    assert minted["token"] not in repr(events) and code not in repr(events)

    revoked = visitor.delete(f"/v1/sessions/{minted['sessionId']}", headers=bearer(minted["token"]))
    assert revoked.status_code == 200
    problem(visitor.get("/v1/sessions", headers=bearer(minted["token"])), 401, "UNAUTHENTICATED")


def test_only_the_verifier_the_cli_started_with_trades_the_code(
    visitor: FlaskClient, provider: oidc_provider.Provider
) -> None:
    code = started_for_cli(visitor, provider, "jay-sub")

    wrong = visitor.post(
        "/auth/cli/token", json={"code": code, "codeVerifier": "w" * 43 + "-another-verifier"}
    )
    problem(wrong, 401, "UNAUTHENTICATED")
    forged = visitor.post(
        "/auth/cli/token", json={"code": code[:-2] + "xx", "codeVerifier": VERIFIER}
    )
    problem(forged, 401, "UNAUTHENTICATED")
    malformed = problem(
        visitor.post("/auth/cli/token", json={"code": code, "codeVerifier": "short"}),
        400,
        "INVALID_REQUEST",
    )
    assert [e["pointer"] for e in malformed["errors"]] == ["/codeVerifier"]

    assert traded(visitor, code)["token"]  # none of those spent it


def test_a_cli_token_is_no_cookie_and_a_cookie_is_no_cli_token(
    signin_app: flask.Flask, provider: oidc_provider.Provider
) -> None:
    browser, cli = signin_app.test_client(), signin_app.test_client()
    sign_in(browser, provider, "kim-sub")
    cookie = session_cookie(browser)
    minted = traded(cli, started_for_cli(cli, provider, "kim-sub"))

    problem(cli.get("/v1/sessions", headers=bearer(cookie)), 401, "UNAUTHENTICATED")
    cli.set_cookie("occ_session", minted["token"])
    problem(cli.get("/v1/sessions"), 401, "UNAUTHENTICATED")
    assert current(browser)["principalId"] == minted["principalId"]


def test_disabling_the_person_ends_their_cli_token(
    visitor: FlaskClient, provider: oidc_provider.Provider, admin: Caller
) -> None:
    minted = traded(visitor, started_for_cli(visitor, provider, "lee-sub"))

    disabled = visitor.delete(f"/v1/principals/{minted['principalId']}", headers=admin.headers)

    assert disabled.status_code == 200, disabled.json
    problem(visitor.get("/v1/sessions", headers=bearer(minted["token"])), 401, "UNAUTHENTICATED")


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("redirect_uri", "https://127.0.0.1:45678/callback"),
        ("redirect_uri", "http://evil.example:45678/callback"),
        ("redirect_uri", "http://localhost:45678/callback"),
        ("redirect_uri", "http://127.0.0.1/callback"),
        ("redirect_uri", "http://127.0.0.1:45678/callback?next=x"),
        # urlsplit drops line ends: the URL checked would not be the one sent back
        ("redirect_uri", "http://127.0.0.1:45678/cb\r\nSet-Cookie: a=b"),
        ("redirect_uri", "http://127.0.0.1:45678/c\tb"),
        ("state", "short"),
        ("code_challenge", "not-a-hash"),
    ],
)
def test_a_cli_sign_in_is_refused_unless_it_returns_to_the_loopback(
    visitor: FlaskClient, parameter: str, value: str
) -> None:
    query = {
        "redirect_uri": REDIRECT,
        "state": STATE,
        "code_challenge": cli_sign_in.challenge_of(VERIFIER),
        parameter: value,
    }
    refused = visitor.get(f"/auth/cli/sign-in/oidc?{urllib.parse.urlencode(query)}")

    found = problem(refused, 400, "INVALID_REQUEST")
    # the API spells every pointer in camelCase
    spelled = {"redirect_uri": "redirectUri", "code_challenge": "codeChallenge"}
    assert [e["pointer"] for e in found["errors"]] == [f"/{spelled.get(parameter, parameter)}"]
    assert visitor.get_cookie("occ_sign_in", path="/auth/") is None
