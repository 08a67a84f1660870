"""The nudge after an admission: fire and forget, never failing the request.

With the broker down the API still answers 201 and the work row exists; the failure is
counted and logged as ``api.nudge-failed``. With the real Redis broker an ``occ.claim``
message lands in the ``occ.control`` list.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import flask
import pytest
import redis

from occ.settings.config import Settings
from occ.state import work_queue
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import nudge
from occ.web.app import create_app
from tests.integration.web.conftest import Caller
from tests.support import brokers, processes
from tests.support.responses import json_of

DEADLINE_S = 10.0
CANDIDATE_REDIS_DBS = (14, *range(12, 0, -1))
"""Redis databases the broker test may take on the test server: the first that is empty and
has no client connected (the suite's shared database may have a worker consuming
``occ.control``, and other suites pick fixed numbers). The test flushes only the one it took."""


def eventually(condition: Callable[[], Any], what: str, deadline_s: float = DEADLINE_S) -> Any:
    """Poll ``condition`` every 20 ms until it returns something truthy, or fail after the
    deadline."""
    return processes.wait_for(condition, timeout=deadline_s, interval=0.02, message=what)


@pytest.fixture
def built_apps() -> Iterator[list[flask.Flask]]:
    apps: list[flask.Flask] = []
    yield apps
    for application in apps:
        application.extensions["occ"].runtime.database.dispose()


def build(
    apps: list[flask.Flask], settings: Settings, nudger: nudge.Nudger | None = None
) -> flask.Flask:
    application = create_app(settings, nudger=nudger)
    application.testing = True
    apps.append(application)
    return application


def test_the_api_admits_with_the_broker_down(
    db: Database,
    settings: Settings,
    admin: Caller,
    built_apps: list[flask.Flask],
    unreachable_broker_nudger: nudge.Nudger,
    capfd: pytest.CaptureFixture[str],
) -> None:
    application = build(built_apps, settings, unreachable_broker_nudger)
    started = time.monotonic()
    response = application.test_client().post(
        "/v1/namespaces", json={"name": "team-a"}, headers=admin.headers
    )
    assert response.status_code == 201, response.json
    # the request does not wait on the broker (a refused publish takes about 2 s of kombu's
    # connection retries, in the nudger's thread)
    assert time.monotonic() - started < 1.5
    namespace_id = json_of(response)["data"]["id"]
    with db.transaction() as session:
        work = work_queue.get(session, f"namespace:{namespace_id}:reconcile:ready")
    assert work is not None and work.state == "queued"

    eventually(lambda: unreachable_broker_nudger.failed >= 1, "the nudge to fail")
    assert unreachable_broker_nudger.sent == 0

    logged: list[dict[str, Any]] = []

    def failure_logged() -> list[dict[str, Any]]:
        _, err = capfd.readouterr()
        lines = (json.loads(raw) for raw in err.splitlines() if raw.startswith("{"))
        logged.extend(line for line in lines if line.get("event") == "api.nudge-failed")
        return logged

    (line, *_) = eventually(failure_logged, "an api.nudge-failed line on stderr")
    assert line["level"] == "warning" and line["error"]
    assert "127.0.0.1:1" not in json.dumps(line)  # the broker URL is not logged


def test_send_now_reports_failure_without_raising(unreachable_broker_nudger: nudge.Nudger) -> None:
    started = time.monotonic()
    assert unreachable_broker_nudger.send_now() is False
    assert time.monotonic() - started < 5.0
    assert unreachable_broker_nudger.failed == 1


def _dedicated() -> str:
    """The URL of a Redis database of the test server that nobody else uses."""
    number = brokers.quiet_database(CANDIDATE_REDIS_DBS)
    if number is None:
        raise AssertionError("no free Redis database on the test server")
    return brokers.url(number)


@pytest.fixture
def broker(settings: Settings) -> Iterator[tuple[Settings, redis.Redis]]:
    url = _dedicated()
    connection = redis.Redis.from_url(url, socket_timeout=5)  # empty, nobody connected
    try:
        yield settings.replace(broker_url=url), connection
    finally:
        connection.flushdb()
        connection.close()


def _claim_messages(connection: redis.Redis) -> list[dict[str, Any]]:
    found = []
    for raw in connection.lrange(tasks_app.CONTROL_QUEUE, 0, -1):
        envelope = json.loads(raw)
        if envelope.get("headers", {}).get("task") == tasks_app.CLAIM:
            found.append(envelope)
    return found


def test_a_claim_nudge_reaches_the_control_queue(
    db: Database, admin: Caller, built_apps: list[flask.Flask], broker: tuple[Settings, redis.Redis]
) -> None:
    settings, connection = broker
    application = build(built_apps, settings)
    nudger = application.extensions["occ"].nudger
    assert _claim_messages(connection) == []
    response = application.test_client().post(
        "/v1/namespaces", json={"name": "team-a"}, headers=admin.headers
    )
    assert response.status_code == 201, response.json

    (envelope, *_) = eventually(
        lambda: _claim_messages(connection), "an occ.claim message in occ.control"
    )
    # the message may land before the sending thread has counted it
    eventually(lambda: nudger.sent >= 1, "the nudger to count its message")
    assert nudger.failed == 0
    assert envelope["content-type"] == "application/json"
    assert envelope["properties"]["delivery_info"]["routing_key"] == tasks_app.CONTROL_QUEUE
    assert envelope["properties"]["body_encoding"] == "base64"
    args, kwargs, _ = json.loads(base64.b64decode(envelope["body"]))
    assert (args, kwargs) == ([], {})
