"""A guard on kombu's Redis channel: a channel closed after its connection was released fails
with a connection error, never an ``AttributeError`` that stops the worker.

Why (kombu 5.7.0, celery 5.7.0, redis-py 8.1.0): when Redis goes away, Celery's consumer calls
``Connection.collect()`` and then ``Connection.close()``. ``collect()`` closes the transport's
channels one after another and stops at the first that raises (a channel draining its
outstanding ``BRPOP`` from a dead socket raises ``ConnectionError``); it then detaches the
transport (``transport.client = None``). A channel it did not reach is closed again later. That
close gets past the drained ``BRPOP``, drops its pool and restores its delivered but
unacknowledged messages through a new pool whose parameters it reads from the detached client:
``AttributeError: 'NoneType' object has no attribute 'hostname'``, which Celery does not count
as a connection error, so the worker exits with "Unrecoverable error". ``docs/reliability.md``
has the reproduction.

Raising ``redis.exceptions.ConnectionError`` instead lets Celery's ``ignore_errors`` swallow it
and reconnect. The unacknowledged messages stay in Redis's unacked set (restored after the
visibility timeout); they are nudges and dispatches whose database claims settle on their own.
This module changes nothing else and holds no state but the class it installs.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class GuardedChannel(kombu_redis.Channel):
    """kombu's Redis channel, refusing to build a pool once its transport was released."""

    def _connparams(self, asynchronous: bool = False) -> Any:
        transport = self.connection
        if transport is None or transport.client is None:
            raise redis.exceptions.ConnectionError("the broker connection was already released")
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call]


def install() -> None:
    """Make kombu's Redis transport open ``GuardedChannel``s (idempotent, process-wide)."""
    if not issubclass(kombu_redis.Transport.Channel, GuardedChannel):
        kombu_redis.Transport.Channel = GuardedChannel


def installed() -> bool:
    return issubclass(kombu_redis.Transport.Channel, GuardedChannel)
