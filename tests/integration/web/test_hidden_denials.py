"""Bounded evidence of denials on what the caller cannot see: counted per principal, resource
kind and minute in one audit event, and answered no sooner than a floor, like a 404 for
something that does not exist."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import flask
import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.settings.config import Settings
from occ.state import audit
from occ.state.db import Database
from occ.web.app import create_app
from tests.integration.web import support
from tests.integration.web.conftest import PEPPER, Caller, namespace
from tests.support import databases

GUESSES = 12
FLOOR_MS = 150


def _hidden_tallies(db: Database, actor_id: str) -> list[audit.AuditEvent]:
    return [
        event
        for event in support.denials(db)
        if event.actor_id == actor_id and "hiddenDenials" in event.details
    ]


def test_denials_on_what_the_caller_cannot_see_are_counted_not_listed(
    client: FlaskClient, db: Database, owner_db: Database, admin: Caller
) -> None:
    theirs = namespace(client, owner_db, admin, "theirs")
    outsider = support.caller(db, name="outsider")  # bound nowhere
    before = len(support.denials(db))
    for _ in range(GUESSES):
        answer = client.get(f"/v1/namespaces/{theirs}", headers=outsider.headers)
        support.problem(answer, 404, "NOT_FOUND")
    tallies = _hidden_tallies(db, outsider.principal_id)
    # one event per minute (two when the guesses straddled a minute), counting every guess
    assert 1 <= len(tallies) <= 2
    assert sum(int(event.details["hiddenDenials"]) for event in tallies) == GUESSES
    assert len(support.denials(db)) - before == len(tallies)
    assert {event.resource_kind for event in tallies} == {"namespace"}
    # each minute's event is its first denial's own: the resource it tried
    assert {event.resource_id for event in tallies} == {theirs}


def test_a_forbidden_denial_on_what_the_caller_can_see_is_still_audited_each_time(
    client: FlaskClient, db: Database, admin: Caller, ns: str
) -> None:
    reader = support.caller(db, "namespace:read", name="reader", namespace_id=ns)
    for _ in range(3):
        answer = client.delete(f"/v1/namespaces/{ns}", headers=reader.headers)
        support.problem(answer, 403, "FORBIDDEN")
    mine = [e for e in support.denials(db) if e.actor_id == reader.principal_id]
    assert len(mine) == 3 and not any("hiddenDenials" in e.details for e in mine)


def test_the_count_is_the_only_change_an_audit_event_accepts(
    client: FlaskClient, db: Database, owner_db: Database, admin: Caller
) -> None:
    theirs = namespace(client, owner_db, admin, "theirs")
    outsider = support.caller(db, name="outsider")
    client.get(f"/v1/namespaces/{theirs}", headers=outsider.headers)
    [tally] = _hidden_tallies(db, outsider.principal_id)
    for statement in (
        "UPDATE occ.audit_events SET action = 'forged' WHERE id = :id",
        "UPDATE occ.audit_events SET details = details || '{\"hiddenDenials\": 0}' WHERE id = :id",
        "DELETE FROM occ.audit_events WHERE id = :id",
    ):
        with (
            pytest.raises(sa.exc.DBAPIError, match="immutable"),
            owner_db.transaction() as session,
        ):
            session.execute(sa.text(statement), {"id": tally.id})
    assert _hidden_tallies(db, outsider.principal_id) == [tally]


@pytest.fixture
def floored(db: Database, database_urls: databases.DatabaseUrls) -> Iterator[flask.Flask]:
    """The API with a floor under its 404s."""
    application = create_app(
        Settings(
            database_url=database_urls.app,
            api_key_pepper=PEPPER,
            secret_key="test-secret-key",
            api_not_found_floor_ms=FLOOR_MS,
        )
    )
    application.testing = True
    yield application


def _timed(client: FlaskClient, path: str, caller: Caller) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    answer = client.get(path, headers=caller.headers)
    elapsed = time.perf_counter() - began
    body = support.problem(answer, 404, "NOT_FOUND")
    return elapsed, {k: v for k, v in body.items() if k != "requestId"}


def test_a_hidden_resource_and_a_missing_one_answer_alike_and_no_sooner_than_the_floor(
    floored: flask.Flask, client: FlaskClient, db: Database, owner_db: Database, admin: Caller
) -> None:
    theirs = namespace(client, owner_db, admin, "theirs")
    outsider = support.caller(db, name="outsider")
    floored_client = floored.test_client()
    hidden_s, hidden = _timed(floored_client, f"/v1/namespaces/{theirs}", outsider)
    missing_s, missing = _timed(
        floored_client, "/v1/namespaces/ns_00000000-0000-4000-8000-000000000000", outsider
    )
    assert hidden == missing
    assert hidden_s >= FLOOR_MS / 1000 and missing_s >= FLOOR_MS / 1000
