"""The start-up wait against a real PostgreSQL: what a database lacks, step by step, and a wait
that ends when the bootstrap lands or fails after its bound, logging as it goes.

Each test gets a database of its own, created empty: the app role sees no schema, then a schema
at an older revision (which it may not read), then the head, then the Installation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import installation
from occ.foundation import errors
from occ.runtime import startup
from occ.state import schema
from occ.state.db import Database
from occ.telemetry import observability
from tests.support import databases


@pytest.fixture
def fresh() -> Iterator[databases.DatabaseUrls]:
    with databases.unmigrated(f"occ_test_startup_{os.getpid()}") as urls:
        yield urls


@pytest.fixture
def app_db(fresh: databases.DatabaseUrls) -> Iterator[Database]:
    database = Database(fresh.app, pool_size=2)
    try:
        yield database
    finally:
        database.dispose()


def _events(text: str) -> list[dict[str, Any]]:
    """occ's events among the JSON lines of ``text`` (other records carry ``message``)."""
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [line for line in lines if "event" in line]


def test_missing_names_each_step_until_the_database_can_serve(
    fresh: databases.DatabaseUrls, app_db: Database
) -> None:
    assert startup.missing(app_db) == startup.NOT_MIGRATED  # no schema at all
    schema.upgrade(fresh.owner, "0006")
    assert startup.missing(app_db) == startup.NOT_MIGRATED  # an older revision
    schema.upgrade(fresh.owner)
    assert startup.missing(app_db) == startup.NOT_BOOTSTRAPPED
    installation.bootstrap_installation(app_db, name="startup", admin_name="admin")
    assert startup.missing(app_db) is None


def test_a_schema_a_newer_release_migrated_is_refused_at_once(
    fresh: databases.DatabaseUrls, app_db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    schema.upgrade(fresh.owner)
    installation.bootstrap_installation(app_db, name="startup", admin_name="admin")
    owner = Database(fresh.owner, pool_size=1)
    try:
        with owner.transaction() as session:
            session.execute(sa.text("UPDATE occ.alembic_version SET version_num = '9999_newer'"))
    finally:
        owner.dispose()
    observability.configure("occ-test")
    clock = _Clock()

    with pytest.raises(errors.SchemaTooNew) as raised:
        startup.wait_until_ready(app_db, timeout_s=60, clock=clock, sleep=clock.sleep)

    assert raised.value.code == "SCHEMA_TOO_NEW" and "9999_newer" in raised.value.detail
    assert clock.sleeps == []  # waiting would not make the schema older
    assert not [e for e in _events(capsys.readouterr().err) if e["event"] == "startup.waiting"]


def test_an_unreachable_database_is_reported_as_such() -> None:
    unreachable = Database("postgresql+psycopg://occ_app:pw@127.0.0.1:1/occ", pool_size=1)
    try:
        assert startup.missing(unreachable) == startup.UNAVAILABLE
    finally:
        unreachable.dispose()


class _Clock:
    """A monotonic clock that moves only when the wait sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_wait_ends_once_migrate_and_bootstrap_land(
    fresh: databases.DatabaseUrls, app_db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    observability.configure("occ-test")
    clock = _Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 3:
            schema.upgrade(fresh.owner)
        if len(clock.sleeps) == 30:
            installation.bootstrap_installation(app_db, name="startup", admin_name="admin")

    startup.wait_until_ready(
        app_db, timeout_s=60, poll_s=0.5, log_every_s=10, clock=clock, sleep=sleep
    )

    assert len(clock.sleeps) == 30 and set(clock.sleeps) == {0.5}
    events = _events(capsys.readouterr().err)
    waiting = [event for event in events if event["event"] == "startup.waiting"]
    # one line when it starts waiting, one every 10 s after: at 0 s (schema), 10 s (bootstrap)
    assert [(event["reason"], event["durationMs"]) for event in waiting] == [
        (startup.NOT_MIGRATED, 0),
        (startup.NOT_BOOTSTRAPPED, 10_000),
    ]
    assert all(event["level"] == "warning" for event in waiting)
    [ready] = [event for event in events if event["event"] == "startup.ready"]
    assert ready["durationMs"] == 15_000
    assert fresh.owner not in json.dumps(events) and databases.APP_PASSWORD not in json.dumps(
        events
    )


def test_a_ready_database_is_not_waited_for_and_logs_nothing(
    fresh: databases.DatabaseUrls, app_db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    schema.upgrade(fresh.owner)
    installation.bootstrap_installation(app_db, name="startup", admin_name="admin")
    observability.configure("occ-test")
    clock = _Clock()
    startup.wait_until_ready(app_db, timeout_s=60, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == []
    assert [e for e in _events(capsys.readouterr().err) if e["event"].startswith("startup.")] == []


def test_the_wait_gives_up_after_its_bound_saying_what_lacks(
    fresh: databases.DatabaseUrls, app_db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    schema.upgrade(fresh.owner)
    observability.configure("occ-test")
    clock = _Clock()
    with pytest.raises(errors.DependencyUnavailable) as raised:
        startup.wait_until_ready(app_db, timeout_s=2, poll_s=0.5, clock=clock, sleep=clock.sleep)
    assert raised.value.detail == f"{startup.NOT_BOOTSTRAPPED} (waited 2 s)"
    assert sum(clock.sleeps) == pytest.approx(2.0)
    waiting = [e for e in _events(capsys.readouterr().err) if e["event"] == "startup.waiting"]
    assert len(waiting) == 1
