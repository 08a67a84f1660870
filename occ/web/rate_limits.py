"""Rate limits of the API, counted in Redis so every API process shares them.

Failed authentication is limited per client address (``Settings.rate_limit_failed_auth``, by
default 20 a minute): each request whose API key or session is refused counts one, and while
an address has used up its window every request from it that needs credentials answers 429
``RATE_LIMITED`` before its key is even looked at, with ``Retry-After`` and the
``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` headers (seconds until
the window ends). Guessing API keys then costs a client a window per 20 guesses instead of
hundreds a second.

The count uses the ``limits`` package's fixed-window strategy on the Redis of
``Settings.rate_limit_storage_url`` (the broker's when unset). Redis being unreachable never
refuses a request: the limit then does not apply and ``http.rate-limit-unavailable`` is logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

import flask
import limits
from limits import storage, strategies

from occ.foundation import errors
from occ.settings.config import Settings
from occ.telemetry import observability

EXTENSION: Final = "occ_rate_limits"
_FAILED_AUTH: Final = "failed-auth"


@dataclass(frozen=True)
class Limits:
    """The limiter and the limit of failed authentication, when there is one."""

    limiter: strategies.FixedWindowRateLimiter
    failed_auth: limits.RateLimitItem

    @classmethod
    def of(cls, settings: Settings) -> Limits | None:
        if settings.rate_limit_failed_auth in (None, "off"):
            return None
        url = settings.rate_limit_storage_url or settings.broker_url
        limiter = strategies.FixedWindowRateLimiter(storage.storage_from_string(url))
        return cls(limiter, limits.parse(settings.rate_limit_failed_auth))


def install(app: flask.Flask, settings: Settings) -> None:
    """Keep ``settings``' limits on ``app``."""
    app.extensions[EXTENSION] = Limits.of(settings)


def _address() -> str:
    return flask.request.remote_addr or "unknown"


def refuse_exhausted_address() -> None:
    """Before authentication: 429 while this address has used up its failed authentications."""
    configured: Limits | None = flask.current_app.extensions.get(EXTENSION)
    if configured is None:
        return
    try:
        allowed = configured.limiter.test(configured.failed_auth, _FAILED_AUTH, _address())
        if allowed:
            return
        stats = configured.limiter.get_window_stats(
            configured.failed_auth, _FAILED_AUTH, _address()
        )
    except Exception as exc:
        _unavailable(exc)
        return
    raise errors.RateLimited(
        "too many failed authentications from this address; retry later",
        limit=configured.failed_auth.amount,
        remaining=0,
        retry_after_s=max(1, int(stats.reset_time - time.time()) + 1),
    )


def count_failed_authentication() -> None:
    """A refused API key or session: one more against this address's window."""
    configured: Limits | None = flask.current_app.extensions.get(EXTENSION)
    if configured is None:
        return
    try:
        configured.limiter.hit(configured.failed_auth, _FAILED_AUTH, _address())
    except Exception as exc:
        _unavailable(exc)


def _unavailable(exc: Exception) -> None:
    observability.log(
        "http.rate-limit-unavailable",
        level=logging.WARNING,
        requestId=flask.g.get("request_id"),
        error=type(exc).__name__,
    )
