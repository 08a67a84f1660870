"""How the processes serve: metrics, readiness, logs, the start-up wait, the API's timeouts,
its rate limits and the default quotas of a Namespace."""

from __future__ import annotations

import re
from typing import Annotated, Final

import pydantic

from occ.foundation import errors
from occ.settings.sources import Variable
from occ.settings.topic import Topic, require_positive

_RATE = re.compile(r"[1-9][0-9]{0,8}/(second|minute|hour)")
RATE_LIMITS: Final = (
    "rate_limit_failed_auth",
    "rate_limit_per_principal",
    "rate_limit_per_address",
)
"""The settings that are rates (``N/minute``) or ``off``."""

QUOTAS: Final = (
    "quota_agents",
    "quota_revisions_per_agent",
    "quota_secrets",
    "quota_configurations",
)
"""The installation's default quotas of each Namespace."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""Values of ``log_level``."""


class Serving(Topic):
    """Metrics, readiness, logs, the start-up wait and the API's bounds (timeouts, rate limits,
    quotas)."""

    metrics_port: Annotated[int | None, Variable("OCC_METRICS_PORT")] = None
    """Port of a worker's Prometheus listener (unset: no listener)."""

    metrics_address: Annotated[str, Variable("OCC_METRICS_ADDRESS")] = "127.0.0.1"
    """Address a worker's Prometheus listener binds."""

    worker_readiness_path: Annotated[str | None, Variable("OCC_WORKER_READINESS_PATH")] = None
    """Marker file a worker writes once its start-up checks passed and removes at shutdown
    (unset: none)."""

    log_level: Annotated[str, Variable("OCC_LOG_LEVEL")] = "INFO"
    """Threshold of every process's logs (occ's, Celery's, gunicorn's): ``DEBUG``, ``INFO``,
    ``WARNING``, ``ERROR`` or ``CRITICAL``, in any case."""

    log_file_max_bytes: Annotated[int, Variable("OCC_LOG_FILE_MAX_BYTES")] = 10 * 1024 * 1024
    """Size at which a log file occ writes is rotated: the ``local`` driver's ``effects.jsonl``
    and each gateway's ``gateway.log``, and ``occ dev``'s logs. The newest lines stay at the
    file's own name; ``name.1`` holds the ones before them."""

    log_file_backups: Annotated[int, Variable("OCC_LOG_FILE_BACKUPS")] = 2
    """Rotated files kept beside each log file (``name.1`` ... ``name.N``): a log takes at most
    about ``(N + 1) * OCC_LOG_FILE_MAX_BYTES`` of disk."""

    startup_wait_ms: Annotated[int, Variable("OCC_STARTUP_WAIT_MS")] = 120_000
    """How long the API (gunicorn's master), the workers and beat wait at start-up for a
    migrated, bootstrapped database before they exit (status 3)."""

    api_header_timeout_ms: Annotated[int, Variable("OCC_API_HEADER_TIMEOUT_MS")] = 10_000
    """How long the API waits for a request's line and header fields (and for the next request
    on a kept-alive connection); a connection that has not sent them by then is closed."""

    api_read_timeout_ms: Annotated[int, Variable("OCC_API_READ_TIMEOUT_MS")] = 30_000
    """How long one read of a request's body, or one write of its answer, may wait for the
    client before the connection is closed."""

    api_body_timeout_ms: Annotated[int, Variable("OCC_API_BODY_TIMEOUT_MS")] = 10_000
    """How long the API waits for a request's whole body, from its first read: a body still
    arriving then is answered 408 ``REQUEST_TIMEOUT`` and its connection closed."""

    api_not_found_floor_ms: Annotated[int, Variable("OCC_API_NOT_FOUND_FLOOR_MS")] = 50
    """Shortest time an authenticated request answered 404 takes: a resource the caller may not
    see and one that does not exist answer alike, in time too (0: no floor)."""

    rate_limit_failed_auth: Annotated[str | None, Variable("OCC_RATE_LIMIT_FAILED_AUTH")] = (
        "20/minute"
    )
    """Failed authentications one client address may make (``N/second``, ``N/minute`` or
    ``N/hour``) before the API answers it 429 ``RATE_LIMITED`` until the window ends, kept in
    Redis so every API process shares the count (``off``: no limit)."""

    rate_limit_per_principal: Annotated[str | None, Variable("OCC_RATE_LIMIT_PER_PRINCIPAL")] = (
        "600/minute"
    )
    """Requests one authenticated principal may make (its API keys and sessions together,
    ``N/second``, ``N/minute`` or ``N/hour``) before the API answers it 429 ``RATE_LIMITED``
    until the window ends (``off``: no limit)."""

    rate_limit_per_address: Annotated[str | None, Variable("OCC_RATE_LIMIT_PER_ADDRESS")] = (
        "1200/minute"
    )
    """Requests one client address may make, with credentials or without, before the API
    answers it 429 ``RATE_LIMITED`` until the window ends (``off``: no limit); ``/healthz``
    and ``/metrics`` are not counted. Behind a proxy that does not pass the client's address,
    every client shares the proxy's."""

    rate_limit_storage_url: Annotated[
        str | None, Variable("OCC_RATE_LIMIT_STORAGE_URL", file=True)
    ] = None
    """Redis the rate limits are counted in (unset: the broker's)."""

    quota_agents: Annotated[int, Variable("OCC_QUOTA_AGENTS")] = 100
    """Agents one Namespace may hold, unless an administrator set its own quota
    (``PATCH /v1/namespaces/{id}/quotas``); a create past it answers 409 ``QUOTA_EXCEEDED``."""

    quota_revisions_per_agent: Annotated[int, Variable("OCC_QUOTA_REVISIONS_PER_AGENT")] = 1000
    """Revisions one Agent may make (each deploy makes one, kept for good), unless its
    Namespace has its own quota; a deploy past it answers 409 ``QUOTA_EXCEEDED``."""

    quota_secrets: Annotated[int, Variable("OCC_QUOTA_SECRETS")] = 200
    """Secrets one Namespace may hold, unless it has its own quota; a create past it answers
    409 ``QUOTA_EXCEEDED``."""

    quota_configurations: Annotated[int, Variable("OCC_QUOTA_CONFIGURATIONS")] = 200
    """Configurations one Namespace may hold, unless it has its own quota; a create past it
    answers 409 ``QUOTA_EXCEEDED``."""

    @pydantic.field_validator("log_level")
    @classmethod
    def _known_level(cls, level: str) -> str:
        if level.upper() not in LOG_LEVELS:
            raise errors.InvalidSettings.at(
                ("log_level",), f"must be one of {', '.join(LOG_LEVELS)}"
            )
        return level.upper()

    @pydantic.model_validator(mode="after")
    def _serving_holds(self) -> Serving:
        require_positive(
            self,
            (
                "log_file_max_bytes",
                "log_file_backups",
                "startup_wait_ms",
                "api_header_timeout_ms",
                "api_read_timeout_ms",
                "api_body_timeout_ms",
            ),
        )
        require_positive(self, QUOTAS)
        for name in RATE_LIMITS:
            rate = getattr(self, name)
            if rate not in (None, "off") and not _RATE.fullmatch(rate or ""):
                raise errors.InvalidSettings.at(
                    (name,), "must be N/second, N/minute or N/hour (N >= 1), or off"
                )
        if self.api_not_found_floor_ms < 0:
            raise errors.InvalidSettings.at(("api_not_found_floor_ms",), "must not be negative")
        return self
