"""Rate limits of the API, counted in Redis so every API process shares them.

Three limits, each a setting (``off`` turns one off):

* every request from one client address (``Settings.rate_limit_per_address``, 1200 a minute),
  with credentials or without, except ``/healthz`` and ``/metrics``;
* every request of one authenticated principal (``Settings.rate_limit_per_principal``, 600 a
  minute), its API keys and sessions together, counted once the caller is known;
* failed authentication per client address (``Settings.rate_limit_failed_auth``, 20 a
  minute): each request whose API key or session is refused counts one, and while an address
  has used up its window every request from it that needs credentials answers 429 before its
  key is even looked at. Guessing API keys then costs a client a window per 20 guesses
  instead of hundreds a second.

A request over a limit answers 429 ``RATE_LIMITED`` with ``Retry-After`` and the
``RateLimit-Limit``, ``RateLimit-Remaining`` and ``RateLimit-Reset`` headers (seconds until
the window ends). Every other response that a limit counted carries the same three headers
for the limit with the fewest requests left, so a client can slow down before it is refused
(one Redis round trip more per response, for the window's end). The counts use the
``limits`` package's fixed-window strategy on the Redis of
``Settings.rate_limit_storage_url`` (the broker's when unset). Redis being unreachable never
refuses a request: the limit then does not apply and ``http.rate-limit-unavailable`` is logged.
"""

from __future__ import annotations

import logging
import math
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
EXEMPT_ENDPOINTS: Final = frozenset({"health.healthz", "metrics.get_metrics"})
"""Probes and scrapes: never counted against an address."""
_FAILED_AUTH: Final = "failed-auth"
_ADDRESS: Final = "address"
_PRINCIPAL: Final = "principal"
_TIGHTEST: Final = "occ_rate_limit_tightest"
"""``flask.g``: the ``_Counted`` limit of this request with the fewest requests left."""


@dataclass(frozen=True)
class _Counted:
    """A limit this request was counted against, and what the count left."""

    item: limits.RateLimitItem
    identifiers: tuple[str, ...]
    remaining: int


@dataclass(frozen=True)
class Limits:
    """The limiter and each limit that is on."""

    limiter: strategies.FixedWindowRateLimiter
    failed_auth: limits.RateLimitItem | None
    per_principal: limits.RateLimitItem | None
    per_address: limits.RateLimitItem | None

    @classmethod
    def of(cls, settings: Settings) -> Limits | None:
        rates = [
            _rate(settings.rate_limit_failed_auth),
            _rate(settings.rate_limit_per_principal),
            _rate(settings.rate_limit_per_address),
        ]
        if not any(rates):
            return None
        url = settings.rate_limit_storage_url or settings.broker_url
        limiter = strategies.FixedWindowRateLimiter(storage.storage_from_string(url))
        return cls(limiter, *rates)


def _rate(setting: str | None) -> limits.RateLimitItem | None:
    return None if setting in (None, "off") else limits.parse(setting or "")


def install(app: flask.Flask, settings: Settings) -> None:
    """Keep ``settings``' limits on ``app``."""
    app.extensions[EXTENSION] = Limits.of(settings)


def _configured() -> Limits | None:
    configured: Limits | None = flask.current_app.extensions.get(EXTENSION)
    return configured


def _address() -> str:
    return flask.request.remote_addr or "unknown"


def limit_address() -> None:
    """``before_request``: count this request against its address; 429 past the limit."""
    configured = _configured()
    if configured is None or configured.per_address is None:
        return
    if flask.request.endpoint in EXEMPT_ENDPOINTS:
        return
    _count(
        configured,
        configured.per_address,
        _ADDRESS,
        _address(),
        "too many requests from this address; retry later",
    )


def limit_principal() -> None:
    """``before_request``, after authentication: count this request against its principal."""
    configured = _configured()
    principal_id = flask.g.get("principal_id")
    if configured is None or configured.per_principal is None or principal_id is None:
        return
    _count(
        configured,
        configured.per_principal,
        _PRINCIPAL,
        str(principal_id),
        "too many requests from this principal; retry later",
    )


def refuse_exhausted_address() -> None:
    """Before authentication: 429 while this address has used up its failed authentications."""
    configured = _configured()
    if configured is None or configured.failed_auth is None:
        return
    item = configured.failed_auth
    try:
        if configured.limiter.test(item, _FAILED_AUTH, _address()):
            return
        refused = _refusal(
            configured,
            item,
            "too many failed authentications from this address; retry later",
            _FAILED_AUTH,
            _address(),
        )
    except Exception as exc:
        _unavailable(exc)
        return
    raise refused


def count_failed_authentication() -> None:
    """A refused API key or session: one more against this address's window."""
    configured = _configured()
    if configured is None or configured.failed_auth is None:
        return
    try:
        configured.limiter.hit(configured.failed_auth, _FAILED_AUTH, _address())
    except Exception as exc:
        _unavailable(exc)


def _count(
    configured: Limits, item: limits.RateLimitItem, kind: str, who: str, detail: str
) -> None:
    """One more request of ``who`` against ``item``; ``RateLimited`` once past it. The same
    increment as ``limiter.hit``, keeping the count for the response's headers."""
    try:
        count = configured.limiter.storage.incr(
            item.key_for(kind, who), item.get_expiry(), amount=1
        )
        if count <= item.amount:
            _keep_tightest(_Counted(item, (kind, who), item.amount - count))
            return
        refused = _refusal(configured, item, detail, kind, who)
    except Exception as exc:
        _unavailable(exc)
        return
    raise refused


def _keep_tightest(counted: _Counted) -> None:
    tightest: _Counted | None = flask.g.get(_TIGHTEST)
    if tightest is None or counted.remaining < tightest.remaining:
        setattr(flask.g, _TIGHTEST, counted)


def tell_remaining(response: flask.Response) -> flask.Response:
    """``after_request``: the ``RateLimit-*`` headers of the tightest limit that counted this
    request (a refusal already carries its own)."""
    configured = _configured()
    tightest: _Counted | None = flask.g.get(_TIGHTEST)
    if configured is None or tightest is None or "RateLimit-Limit" in response.headers:
        return response
    try:
        ends_at = configured.limiter.storage.get_expiry(
            tightest.item.key_for(*tightest.identifiers)
        )
    except Exception as exc:
        _unavailable(exc)
        return response
    response.headers["RateLimit-Limit"] = str(tightest.item.amount)
    response.headers["RateLimit-Remaining"] = str(tightest.remaining)
    response.headers["RateLimit-Reset"] = str(max(0, math.ceil(ends_at - time.time())))
    return response


def _refusal(
    configured: Limits, item: limits.RateLimitItem, detail: str, *identifiers: str
) -> errors.RateLimited:
    stats = configured.limiter.get_window_stats(item, *identifiers)
    return errors.RateLimited(
        detail,
        limit=item.amount,
        remaining=0,
        retry_after_s=max(1, int(stats.reset_time - time.time()) + 1),
    )


def _unavailable(exc: Exception) -> None:
    observability.log(
        "http.rate-limit-unavailable",
        level=logging.WARNING,
        requestId=flask.g.get("request_id"),
        error=type(exc).__name__,
    )
