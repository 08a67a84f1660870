"""``WorkerProcess`` against a real broker and database: nudge coalescing, one worker per pid."""

from __future__ import annotations

import json
import uuid

import redis

from occ.settings.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import names, worker_process
from tests.support import databases
from tests.support.processes import wait_for


def test_completion_nudges_coalesce_to_one_now_and_one_delayed(
    database_urls: databases.DatabaseUrls, broker_url: str
) -> None:
    app = tasks_app.create(Settings(database_url=database_urls.app, broker_url=broker_url))
    # a key prefix of its own: other runs on the same Redis neither see nor take these messages
    prefix = f"occ-test-{uuid.uuid4().hex}:"
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "global_keyprefix": prefix,
    }
    queue = prefix + names.CONTROL_QUEUE
    process = worker_process.of(app)
    client = redis.Redis.from_url(broker_url)
    try:
        for _ in range(20):  # a burst well inside one gap
            process.nudge_after_completion()
        assert client.llen(queue) == 1  # one at once; the other waits here for the gap's end
        wait_for(
            lambda: client.llen(queue) == 2,
            timeout=worker_process.COMPLETION_NUDGE_GAP_S * 8,
            interval=0.01,
            message="the delayed nudge, sent at the gap's end",
        )
        for raw in client.lrange(queue, 0, -1):  # sent to run at once: no ETA, no expiry
            headers = json.loads(raw)["headers"]
            assert headers.get("eta") is None and headers.get("expires") is None

        # after the gap a completion nudges at once again
        def nudged_at_once() -> bool:
            process.nudge_after_completion()
            return client.llen(queue) >= 3

        wait_for(
            nudged_at_once,
            timeout=5,
            interval=worker_process.COMPLETION_NUDGE_GAP_S,
            message="a nudge after the gap",
        )
    finally:
        client.delete(queue)
        client.close()
        app.close()


def test_the_worker_is_built_once_per_process(
    database_urls: databases.DatabaseUrls, broker_url: str
) -> None:
    app = tasks_app.create(Settings(database_url=database_urls.app, broker_url=broker_url))
    process = worker_process.of(app)
    try:
        first = process.worker()
        assert process.worker() is first
        assert first.shutdown is process.shutdown
        process.forget_worker()  # what start-up does before the pool forks
        assert process.worker() is not first
        first.database.dispose()
    finally:
        process.dispose()
        app.close()
