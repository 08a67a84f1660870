"""Signing in with an OpenID Connect provider (a real one, over HTTP), the session cookie,
CSRF, rotation, timeouts and revocation, through the Flask app."""

from __future__ import annotations

import datetime as dt
import urllib.parse
from typing import cast

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.controller import sign_in as sign_in_cases
from occ.state import audit, models
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.signing import (
    AUTH_SECRET,
    body,
    current,
    session_cookie,
    sign_in,
    signed_in,
)
from tests.support import grants, oidc_provider
from tests.support.processes import wait_for


def test_a_person_signs_in_with_a_cookie_that_is_host_only_httponly_and_lax(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database
) -> None:
    provider.set_user("alice-sub", name="Alice", email="alice@example.com")

    landed = sign_in(visitor, provider, "alice-sub", next_path="/console/namespaces")

    assert landed == "/console/namespaces"
    cookie = visitor.get_cookie("occ_session")
    assert cookie is not None
    assert cookie.http_only and cookie.same_site == "Lax" and not cookie.secure
    assert cookie.domain in ("localhost", "", None) or not cookie.domain.startswith(".")
    mine = current(visitor)
    assert mine["issuer"] == provider.issuer
    assert len(mine["csrfToken"]) == 64
    with db.transaction() as session:
        principal = session.execute(
            sa.select(models.Principal).where(models.Principal.id == mine["principalId"])
        ).scalar_one()
        assert (principal.name, principal.kind) == ("Alice", "human")
        identity = session.execute(sa.select(models.PrincipalIdentity)).scalar_one()
        assert (identity.issuer, identity.subject) == (provider.issuer, "alice-sub")
        actions = [event.action for event in audit.list_events(session)]
    assert "principals.link" in actions and "sessions.create" in actions
    assert session_cookie(visitor) not in repr(actions)


def test_the_same_subject_signs_in_as_the_same_principal_and_the_old_session_is_rotated(
    visitor: FlaskClient, provider: oidc_provider.Provider
) -> None:
    first = signed_in(visitor, provider, "bob-sub")
    first_cookie = session_cookie(visitor)

    second = signed_in(visitor, provider, "bob-sub")

    assert second["principalId"] == first["principalId"]
    assert second["id"] != first["id"]
    sessions = body(visitor.get("/v1/sessions"))["data"]
    assert [(s["id"], s["revokedAt"] is not None) for s in sessions] == [
        (first["id"], True),
        (second["id"], False),
    ]
    visitor.set_cookie("occ_session", first_cookie)
    assert visitor.get("/v1/sessions/current").status_code == 401


def test_a_signed_in_person_is_authorized_by_the_same_iam_as_a_key(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database, admin: Caller
) -> None:
    me = signed_in(visitor, provider, "carol-sub")
    csrf = {"X-CSRF-Token": me["csrfToken"]}

    assert body(visitor.get("/v1/namespaces"))["data"] == []
    refused = visitor.post("/v1/namespaces", json={"name": "carol-ns"}, headers=csrf)
    assert refused.status_code == 403 and body(refused)["code"] == "FORBIDDEN"

    grants.give(db, me["principalId"], ["namespace:create", "namespace:read"])
    created = visitor.post("/v1/namespaces", json={"name": "carol-ns"}, headers=csrf)

    assert created.status_code == 201, created.json
    listed = body(visitor.get("/v1/namespaces"))["data"]
    assert [n["name"] for n in listed] == ["carol-ns"]


def test_a_change_made_with_the_cookie_needs_the_csrf_token(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database, owner_db: Database
) -> None:
    me = signed_in(visitor, provider, "dave-sub")
    grants.give(db, me["principalId"], ["namespace:create", "namespace:read"])

    for headers in ({}, {"X-CSRF-Token": "0" * 64}):
        refused = visitor.post("/v1/namespaces", json={"name": "dave-ns"}, headers=headers)
        assert refused.status_code == 403
        assert body(refused)["code"] == "CSRF_TOKEN_INVALID"
    with owner_db.transaction() as session:
        assert (
            session.execute(sa.select(sa.func.count()).select_from(models.Namespace)).scalar() == 0
        )


def test_an_api_key_keeps_working_beside_a_cookie(
    visitor: FlaskClient, provider: oidc_provider.Provider, admin: Caller
) -> None:
    sign_in(visitor, provider, "erin-sub")

    created = visitor.post("/v1/namespaces", json={"name": "by-key"}, headers=admin.headers)

    assert created.status_code == 201, created.json


def test_a_revoked_session_stops_authenticating_at_once(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database
) -> None:
    me = signed_in(visitor, provider, "frank-sub")

    without_token = visitor.delete(f"/v1/sessions/{me['id']}")
    assert without_token.status_code == 403
    revoked = visitor.delete(f"/v1/sessions/{me['id']}", headers={"X-CSRF-Token": me["csrfToken"]})

    assert revoked.status_code == 200 and body(revoked)["data"]["revokedAt"] is not None
    assert visitor.get("/v1/sessions/current").status_code == 401
    with db.transaction() as session:
        revocations = [e for e in audit.list_events(session) if e.action == "sessions.revoke"]
    assert [e.resource_id for e in revocations] == [me["id"]]


def test_an_administrator_revokes_another_persons_session_and_others_may_not(
    signin_app: flask.Flask, provider: oidc_provider.Provider, admin: Caller
) -> None:
    gina, hank = signin_app.test_client(), signin_app.test_client()
    sign_in(gina, provider, "gina-sub")
    sign_in(hank, provider, "hank-sub")
    ginas = current(gina)
    hanks = current(hank)

    refused = hank.delete(
        f"/v1/sessions/{ginas['id']}", headers={"X-CSRF-Token": hanks["csrfToken"]}
    )
    assert refused.status_code == 403
    assert gina.get("/v1/sessions/current").status_code == 200

    revoked = signin_app.test_client().delete(f"/v1/sessions/{ginas['id']}", headers=admin.headers)
    assert revoked.status_code == 200
    assert gina.get("/v1/sessions/current").status_code == 401


@pytest.mark.parametrize("column", ["last_seen_at", "expires_at"])
def test_an_idle_or_expired_session_ends(
    visitor: FlaskClient, provider: oidc_provider.Provider, owner_db: Database, column: str
) -> None:
    me = signed_in(visitor, provider, f"ivy-{column}")
    with owner_db.transaction() as session:
        table = cast(sa.Table, models.UserSession.__table__)
        session.execute(
            sa.update(table)
            .where(table.c.id == me["id"])
            .values(
                {
                    column: sa.func.clock_timestamp() - sa.text("interval '3 hours'"),
                    "created_at": sa.func.clock_timestamp() - sa.text("interval '1 day'"),
                }
            )
        )

    assert visitor.get("/v1/sessions/current").status_code == 401


def test_a_disabled_principal_cannot_sign_in_or_use_its_session(
    visitor: FlaskClient, provider: oidc_provider.Provider, admin: Caller
) -> None:
    me = signed_in(visitor, provider, "jack-sub")

    disabled = visitor.delete(f"/v1/principals/{me['principalId']}", headers=admin.headers)
    assert disabled.status_code == 200, disabled.json
    assert visitor.get("/v1/sessions/current").status_code == 401

    started = visitor.get("/auth/sign-in/oidc")
    callback = urllib.parse.urlsplit(
        provider.authorize(str(started.headers["Location"]), "jack-sub")
    )
    refused = visitor.get(f"{callback.path}?{callback.query}")
    assert refused.status_code == 401


def test_sign_out_revokes_the_session_and_clears_the_cookie(
    visitor: FlaskClient, provider: oidc_provider.Provider
) -> None:
    me = signed_in(visitor, provider, "kim-sub")
    token = session_cookie(visitor)

    assert visitor.post("/auth/sign-out").status_code == 403
    signed_out = visitor.post("/auth/sign-out", headers={"X-CSRF-Token": me["csrfToken"]})

    assert signed_out.status_code == 204
    assert visitor.get_cookie("occ_session") is None
    visitor.set_cookie("occ_session", token)
    assert visitor.get("/v1/sessions/current").status_code == 401


def test_a_callback_without_its_started_sign_in_or_with_another_state_is_refused(
    visitor: FlaskClient, signin_app: flask.Flask, provider: oidc_provider.Provider
) -> None:
    started = visitor.get("/auth/sign-in/oidc")
    callback = urllib.parse.urlsplit(provider.authorize(str(started.headers["Location"]), "lee"))
    query = urllib.parse.parse_qs(callback.query)

    stranger = signin_app.test_client().get(f"{callback.path}?{callback.query}")
    assert stranger.status_code == 401
    forged = visitor.get(f"{callback.path}?code={query['code'][0]}&state=forged")
    assert forged.status_code == 401
    assert visitor.get_cookie("occ_session") is None


def test_the_redirect_after_sign_in_never_leaves_the_site(
    visitor: FlaskClient, provider: oidc_provider.Provider
) -> None:
    for requested in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        assert sign_in(visitor, provider, "mia-sub", next_path=requested) == "/console"


def test_providers_are_listed_and_an_unknown_one_is_not_found(visitor: FlaskClient) -> None:
    listed = visitor.get("/auth/providers")

    assert listed.json == {"data": [{"name": "oidc", "label": "Single sign-on"}]}
    assert visitor.get("/auth/sign-in/nowhere").status_code == 404


def test_a_cookie_is_ignored_when_sign_in_is_not_configured(client: FlaskClient) -> None:
    client.set_cookie("occ_session", "ses_x.y")

    refused = client.get("/v1/namespaces")

    assert refused.status_code == 401 and body(refused)["code"] == "UNAUTHENTICATED"


def test_a_one_time_link_signs_in_once_and_authenticates_nothing_before(
    visitor: FlaskClient, signin_app: flask.Flask, db: Database, admin: Caller
) -> None:
    token = sign_in_cases.issue_one_time_link(
        db,
        principal_id=admin.principal_id,
        secret_key=AUTH_SECRET,
        lifetime=dt.timedelta(minutes=5),
    )
    visitor.set_cookie("occ_session", token)
    assert visitor.get("/v1/sessions/current").status_code == 401  # not a session itself
    visitor.delete_cookie("occ_session")

    redeemed = visitor.get(f"/auth/one-time?token={token}")

    assert redeemed.status_code == 303 and redeemed.headers["Location"] == "/console"
    assert current(visitor)["principalId"] == admin.principal_id
    again = signin_app.test_client().get(f"/auth/one-time?token={token}")
    assert again.status_code == 401
    with db.transaction() as session:
        actions = [e.action for e in audit.list_events(session)]
    assert "sessions.issue_link" in actions and actions.count("sessions.create") == 1


def test_a_session_token_or_an_expired_link_is_no_one_time_link(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database, admin: Caller
) -> None:
    sign_in(visitor, provider, "quinn-sub")
    session_token = session_cookie(visitor)
    expired = sign_in_cases.issue_one_time_link(
        db,
        principal_id=admin.principal_id,
        secret_key=AUTH_SECRET,
        lifetime=dt.timedelta(milliseconds=1),
    )

    assert visitor.get(f"/auth/one-time?token={session_token}").status_code == 401
    wait_for(
        lambda: visitor.get(f"/auth/one-time?token={expired}").status_code == 401,
        timeout=5,
        message="the link to expire",
    )
