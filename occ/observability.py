"""Observability: JSON log lines with allow-listed fields (never secrets).

``log(event, **fields)`` writes one JSON object per line on stderr with ``event``,
``service``, ``time`` and ``level``; fields outside ``ALLOWED_FIELDS`` are dropped, so a
caller cannot leak a token or a request body by accident.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import Any, Final

ALLOWED_FIELDS: Final = frozenset(
    {
        "requestId",
        "method",
        "path",
        "route",
        "status",
        "durationMs",
        "principalId",
        "code",
        "error",
        "workId",
        "attempt",
        "operation",
        "namespaceId",
        "agentId",
        "revisionId",
        "outcome",
        "count",
        "queue",
        "task",
        "worker",
        "pid",
        "reason",
        "url",
        "port",
        "apiUrl",
        "adminKeyFile",
        "computeDriver",
        "brokerUrl",
        "child",
        "exitStatus",
        "delayMs",
    }
)

_logger = logging.getLogger("occ")


class _JsonLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(record.getMessage() + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


_SERVICE = {"name": "occ"}


def configure(service: str, level: int = logging.INFO) -> None:
    """Send occ's events to stderr as JSON lines for ``service`` (``occ-api``, ``occ-worker``)."""
    _SERVICE["name"] = service
    if not any(isinstance(handler, _JsonLines) for handler in _logger.handlers):
        _logger.addHandler(_JsonLines())
    _logger.setLevel(level)
    _logger.propagate = False


def log(event: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Write one event; only allow-listed fields are kept."""
    if not _logger.isEnabledFor(level):
        return
    line = {
        "event": event,
        "service": _SERVICE["name"],
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "level": logging.getLevelName(level).lower(),
    }
    line.update({key: value for key, value in fields.items() if key in ALLOWED_FIELDS})
    _logger.log(level, json.dumps(line, default=str, separators=(",", ":")))
