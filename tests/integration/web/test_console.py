"""The console's pages through the Flask app: sign-in first, what a signed-in person sees,
escaping, the Content-Security-Policy, and the 403 and 404 pages (the browser suite,
``tests/browser``, drives the same pages in Chromium)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flask
import pytest
from flask.testing import FlaskClient

from occ.state.db import Database
from occ.web import access
from occ.web.console import pages
from tests.integration.web.conftest import Caller, namespace
from tests.integration.web.signing import sign_in, signed_in
from tests.support import grants, oidc_provider


def test_a_page_without_a_session_redirects_to_sign_in(visitor: FlaskClient) -> None:
    answer = visitor.get("/console/namespaces")

    assert answer.status_code == 303
    assert answer.headers["Location"] == "/console/sign-in?next=/console/namespaces"


def test_the_sign_in_page_lists_the_providers_under_a_strict_policy(visitor: FlaskClient) -> None:
    answer = visitor.get("/console/sign-in?next=/console/namespaces")

    assert answer.status_code == 200
    assert b"Sign in with Single sign-on" in answer.data
    assert b'href="/auth/sign-in/oidc?next=%2Fconsole%2Fnamespaces"' in answer.data
    assert answer.headers["Content-Security-Policy"] == pages.CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in answer.headers["Content-Security-Policy"]
    assert b"<script>" not in answer.data and b" on" + b"click" not in answer.data


ReaderOf = Callable[[str, str], tuple[dict[str, Any], str]]


@pytest.fixture
def reader_of(
    visitor: FlaskClient,
    client: FlaskClient,
    provider: oidc_provider.Provider,
    db: Database,
    owner_db: Database,
    admin: Caller,
) -> ReaderOf:
    """Sign a subject in as the visitor and let them read a new ready Namespace of a name:
    their session and the Namespace's id."""

    def reader(subject: str, name: str) -> tuple[dict[str, Any], str]:
        me = signed_in(visitor, provider, subject)
        shown = namespace(client, owner_db, admin, name)
        grants.give(db, me["principalId"], ["namespace:read"], namespace_id=shown)
        return me, shown

    return reader


def test_a_signed_in_person_sees_what_iam_lets_them_read_escaped(
    visitor: FlaskClient,
    client: FlaskClient,
    owner_db: Database,
    admin: Caller,
    reader_of: ReaderOf,
) -> None:
    hidden = namespace(client, owner_db, admin, "not-yours")
    me, _ = reader_of("nora-sub", "<b>team</b>")

    page = visitor.get("/console/namespaces")

    assert page.status_code == 200
    assert b"&lt;b&gt;team&lt;/b&gt;" in page.data and b"<b>team</b>" not in page.data
    assert hidden.encode() not in page.data and b"not-yours" not in page.data
    assert f'content="{me["csrfToken"]}"'.encode() in page.data
    assert visitor.get(f"/console/namespaces/{hidden}").status_code == 404


def test_a_page_the_person_may_not_open_answers_a_403_page(
    visitor: FlaskClient, provider: oidc_provider.Provider, admin: Caller
) -> None:
    sign_in(visitor, provider, "oscar-sub")

    answer = visitor.get("/console/work")

    assert answer.status_code == 403
    assert b"Not allowed" in answer.data
    assert answer.headers["Content-Security-Policy"] == pages.CONTENT_SECURITY_POLICY


def test_the_ledger_pages_filter_by_namespace_and_one_known_value(
    visitor: FlaskClient, provider: oidc_provider.Provider, db: Database, admin: Caller
) -> None:
    me = signed_in(visitor, provider, "petra-sub")
    grants.give(db, me["principalId"], ["installation:administer", "installation:read"])

    work = visitor.get("/console/work?namespace=ns_chosen&state=queued")
    audit = visitor.get("/console/audit?kind=access")

    assert work.status_code == 200 and audit.status_code == 200
    assert b'value="ns_chosen"' in work.data
    assert b'<option value="queued" selected>' in work.data
    assert b'<option value="claimed" >' in work.data
    assert b'<option value="access" selected>' in audit.data
    assert visitor.get("/console/work?state=lost").status_code == 404
    assert visitor.get("/console/audit?kind=lost").status_code == 404


def test_the_script_and_styles_are_served_from_this_origin(visitor: FlaskClient) -> None:
    script = visitor.get("/console/static/console.js")
    styles = visitor.get("/console/static/console.css")

    assert script.status_code == 200 and b"X-CSRF-Token" in script.data
    assert styles.status_code == 200


def test_every_console_route_declares_who_may_open_it(signin_app: flask.Flask) -> None:
    for rule in signin_app.url_map.iter_rules():
        if rule.rule.startswith("/console"):
            declared = access.declared(signin_app.view_functions[rule.endpoint])
            assert declared in (access.PUBLIC, access.AUTHENTICATED), rule.rule


def test_an_action_the_person_may_not_take_is_disabled(
    visitor: FlaskClient, db: Database, reader_of: ReaderOf
) -> None:
    me, shown = reader_of("pia-sub", "team-p")

    read_only = visitor.get("/console/namespaces").get_data(as_text=True)

    assert read_only.count("disabled title=") == 2  # create, and delete team-p
    grants.give(db, me["principalId"], ["namespace:create", "namespace:delete"])
    allowed = visitor.get("/console/namespaces").get_data(as_text=True)
    assert "disabled title=" not in allowed
    namespace_page = visitor.get(f"/console/namespaces/{shown}").get_data(as_text=True)
    assert namespace_page.count("disabled title=") == 2  # Configuration, Secret


def test_an_administrator_sees_people_and_bindings_and_others_get_403(
    visitor: FlaskClient,
    signin_app: flask.Flask,
    provider: oidc_provider.Provider,
    db: Database,
    admin: Caller,
) -> None:
    provider.set_user("rita-sub", name="Rita <Admin>")
    rita = signed_in(visitor, provider, "rita-sub")
    other = signin_app.test_client()
    sign_in(other, provider, "sam-sub")
    assert other.get("/console/people").status_code == 403

    grants.give(db, rita["principalId"], ["installation:administer"])
    page = visitor.get("/console/people")

    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Rita &lt;Admin&gt;" in text and "Rita <Admin>" not in text
    assert admin.principal_id in text and 'data-api="POST /v1/access-bindings"' in text
    assert text.count('data-api="DELETE /v1/access-bindings/') >= 2  # admin's and Rita's
