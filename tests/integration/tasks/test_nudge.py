"""The API's nudger on the real Redis broker: nudges coalesce, at most one ``occ.claim``
message per coalescing interval, however many admissions asked meanwhile."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from sqlalchemy.engine import make_url

from occ.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import names, nudge
from tests.support import processes

COALESCE_S = 0.5
CANDIDATE_REDIS_DBS = (14, *range(12, 0, -1))


@pytest.fixture
def quiet_broker_url(broker_url: str) -> Iterator[str]:
    """An empty Redis database nobody is connected to (the suite's fixed one may have a worker
    of a parallel run consuming ``occ.control``); flushed afterwards."""

    def on(number: int) -> str:
        return make_url(broker_url).set(database=str(number)).render_as_string(hide_password=False)

    with redis.Redis.from_url(broker_url, socket_timeout=5) as probe:
        busy = {int(client["db"]) for client in probe.client_list()}
    for number in CANDIDATE_REDIS_DBS:
        if number in busy:
            continue
        with redis.Redis.from_url(on(number), socket_timeout=5) as candidate:
            if candidate.dbsize() == 0:
                yield on(number)
                candidate.flushdb()
                return
    pytest.fail("no free Redis database on the test server")


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
