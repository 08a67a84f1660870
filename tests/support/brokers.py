"""Celery broker URLs on the test Redis: one Redis database per suite, emptied around its use.

``OCC_TEST_REDIS_URL`` names the server; each suite (and benchmark) takes a database number of
its own so that runs side by side never read each other's queues. Nothing here starts Redis.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator

import redis


def url(database: int) -> str:
    """The test Redis server's URL with its database set to ``database``."""
    base = os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    return base.rsplit("/", 1)[0] + f"/{database}"


@contextlib.contextmanager
def flushed(database: int) -> Iterator[str]:
    """The URL of ``database``, empty on entry and emptied again on exit."""
    broker = url(database)
    client = redis.Redis.from_url(broker)
    client.flushdb()
    try:
        yield broker
    finally:
        client.flushdb()
        client.close()


def quiet_database(candidates: Iterable[int]) -> int | None:
    """The first of the ``candidates`` database numbers that is empty and that no client is
    connected to (a parallel run's worker would be), or None."""
    with redis.Redis.from_url(url(0), socket_timeout=5) as probe:
        busy = {int(client["db"]) for client in probe.client_list()}
    for number in candidates:
        if number in busy:
            continue
        with redis.Redis.from_url(url(number), socket_timeout=5) as candidate:
            if candidate.dbsize() == 0:
                return number
    return None
