"""The API's nudger on the real Redis broker: nudges coalesce, at most one ``occ.claim``
message per coalescing interval, however many admissions asked meanwhile."""

from __future__ import annotations

import time

import redis

from occ.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import names, nudge
from tests.support import processes

COALESCE_S = 0.5


def claim_messages(broker_url: str) -> int:
    with redis.Redis.from_url(broker_url, socket_timeout=5) as connection:
        return int(connection.llen(names.CONTROL_QUEUE))


def test_a_burst_of_nudges_shares_one_message_per_interval(
    env: dict[str, str], broker_url: str
) -> None:
    nudger = nudge.Nudger(tasks_app.create(Settings.from_env(env)), coalesce_s=COALESCE_S)
    started = time.monotonic()
    nudger.nudge()
    processes.wait_for(lambda: nudger.sent == 1, timeout=10, message="the first occ.claim")
    for _ in range(50):  # inside the interval: all of them wait for the next message
        nudger.nudge()
    processes.wait_for(lambda: nudger.sent == 2, timeout=10, message="the second occ.claim")
    elapsed = time.monotonic() - started

    assert elapsed >= COALESCE_S  # the second message waited out the interval
    assert nudger.failed == 0
    assert claim_messages(broker_url) == 2
