"""The API's nudger on the real Redis broker: nudges coalesce, at most one ``occ.claim``
message per coalescing interval, however many admissions asked meanwhile."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from occ.settings.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import names, nudge
from tests.support import brokers, processes

COALESCE_S = 0.5
CANDIDATE_REDIS_DBS = (14, *range(12, 0, -1))


@pytest.fixture
def quiet_broker_url() -> Iterator[str]:
    """An empty Redis database nobody is connected to (the suite's fixed one may have a worker
    of a parallel run consuming ``occ.control``); flushed afterwards."""
    number = brokers.quiet_database(CANDIDATE_REDIS_DBS)
    if number is None:
        pytest.fail("no free Redis database on the test server")
    with brokers.flushed(number) as url:
        yield url


def claim_messages(broker_url: str) -> int:
    with redis.Redis.from_url(broker_url, socket_timeout=5) as connection:
        return int(connection.llen(names.CONTROL_QUEUE))


def test_a_burst_of_nudges_shares_one_message_per_interval(
    env: dict[str, str], quiet_broker_url: str
) -> None:
    settings = Settings.from_env({**env, "OCC_BROKER_URL": quiet_broker_url})
    nudger = nudge.Nudger(tasks_app.create(settings), coalesce_s=COALESCE_S)
    started = time.monotonic()
    nudger.nudge()
    processes.wait_for(lambda: nudger.sent == 1, timeout=10, message="the first occ.claim")
    for _ in range(50):  # inside the interval: all of them wait for the next message
        nudger.nudge()
    processes.wait_for(lambda: nudger.sent == 2, timeout=10, message="the second occ.claim")
    elapsed = time.monotonic() - started

    assert elapsed >= COALESCE_S  # the second message waited out the interval
    assert nudger.failed == 0
    assert claim_messages(quiet_broker_url) == 2
