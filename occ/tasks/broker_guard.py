"""Workers that outlive a broker outage: a guard on kombu's Redis channel, and prompt reconnection.

``GuardedChannel``: a channel closed after its connection was released fails with a connection
error, never an ``AttributeError`` that stops the worker. ``AMQP`` (the app's ``amqp`` class)
makes Celery's connections retry a lost broker at least once a second, where kombu's default
backs off to 30 s, so work admitted during an outage is claimed within a claim interval of
the broker's return.

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
Nothing here changes what is published or consumed; the only state is the installed class.
"""

from __future__ import annotations

from typing import Any, Final

import redis
from celery.app import amqp
from kombu import connection as kombu_connection
from kombu.transport import redis as kombu_redis

RECONNECT_INTERVAL_MAX_S: Final = 1.0
"""Longest wait between two attempts to reach a lost broker."""


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


class ReconnectingConnection(kombu_connection.Connection):
    """kombu's connection, retrying a lost broker promptly (at most every second) and forever
    when the caller sets no retry limit."""

    def _ensure_connection(  # noqa: PLR0917 - kombu's signature
        self,
        errback: Any = None,
        max_retries: Any = None,
        interval_start: float = 2,
        interval_step: float = 2,
        interval_max: float = 30,
        callback: Any = None,
        reraise_as_library_errors: bool = True,
        timeout: Any = None,
    ) -> Any:
        return super()._ensure_connection(  # type: ignore[no-untyped-call]
            errback,
            max_retries,
            interval_start=min(interval_start, RECONNECT_INTERVAL_MAX_S / 5),
            interval_step=min(interval_step, RECONNECT_INTERVAL_MAX_S / 5),
            interval_max=min(interval_max, RECONNECT_INTERVAL_MAX_S),
            callback=callback,
            reraise_as_library_errors=reraise_as_library_errors,
            timeout=timeout,
        )


class AMQP(amqp.AMQP):  # type: ignore[misc]
    """Celery's AMQP helpers with ``ReconnectingConnection`` connections."""

    Connection = ReconnectingConnection
