"""Observability: one JSON object per log line, for occ's events and every other record alike.

``log(event, **fields)`` writes one occ event; fields outside ``ALLOWED_FIELDS`` are dropped, so
a caller cannot leak a token or a request body by accident. ``configure(service, level)`` makes
a process's root logger write every record (occ's events, Celery's and gunicorn's records, Python
warnings) to stderr through ``JsonFormatter``, the one log format of occ, at ``level``
(``Settings.log_level``).

A line has ``time`` (UTC, ISO 8601 with milliseconds), ``level`` (lower case), ``service``,
``logger``, then ``event`` and the event's allowed fields, or ``message`` for any other record.
A record with an exception adds ``error`` (the exception's class) and ``traceback`` (its text,
newlines escaped: still one line). Passwords of URLs are masked in messages and tracebacks.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
import threading
from types import TracebackType
from typing import Any, Final

from occ.settings.platform import mask_url_password

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
        "repairs",
        "lagS",
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
        "sandboxDriver",
        "hookOwners",
        "brokerUrl",
        "child",
        "exitStatus",
        "delayMs",
        "cause",
        "skewMs",
        "version",
        "deployPasses",
        "prepareMs",
        "readinessWaitMs",
        "activationMs",
        "elapsedMs",
        "dependency",
        "statusReason",
        "warnings",
    }
)

EVENT_ATTRIBUTE: Final = "occ_event"
"""The attribute of a record that is an occ event: ``{"event": name, **allowed fields}``."""

_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")

_logger = logging.getLogger("occ")
_SERVICE = {"name": "occ"}


def mask_secrets(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    return _URL.sub(lambda found: mask_url_password(found.group(0)), text)


def _timestamp(created: float) -> str:
    return dt.datetime.fromtimestamp(created, dt.UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    """occ's log format: one JSON object per record, for the process ``service``."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
        }
        event = getattr(record, EVENT_ATTRIBUTE, None)
        if isinstance(event, dict):
            line.update(event)
        else:
            line["message"] = mask_secrets(record.getMessage())
        if record.exc_info and record.exc_info[0] is not None:
            line.setdefault("error", record.exc_info[0].__name__)
            line["traceback"] = mask_secrets(self.formatException(record.exc_info))
        if record.stack_info:
            line["stack"] = mask_secrets(self.formatStack(record.stack_info))
        return json.dumps(line, default=str, separators=(",", ":"))


class _JsonLines(logging.Handler):
    """Writes formatted records to the current ``sys.stderr`` (so a redirected one too)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def configure(service: str, level: int | str = logging.INFO) -> None:
    """Write every record of this process to stderr as occ's JSON lines, at ``level``.

    ``service`` names the process (``occ-api``, ``occ-worker``, ``occ-beat``); ``level`` is a
    level or its name (``Settings.log_level``). Calling it again replaces service and level.
    """
    _SERVICE["name"] = service
    root = logging.getLogger()
    handler = next((each for each in root.handlers if isinstance(each, _JsonLines)), None)
    if handler is None:
        handler = _JsonLines()
        root.addHandler(handler)
    handler.setFormatter(JsonFormatter(service))
    handler.setLevel(level)
    root.setLevel(level)
    _logger.setLevel(logging.NOTSET)
    _logger.propagate = True
    logging.captureWarnings(True)  # a warning is a record too, not lines of text on stderr


def service() -> str:
    """The service this process's lines name (``occ`` until ``configure`` is called)."""
    return _SERVICE["name"]


def render(record: logging.LogRecord) -> str:
    """``record`` as this process's JSON line, for text written outside logging."""
    return JsonFormatter(service()).format(record)


def capture_uncaught() -> None:
    """Log an exception that nothing caught (main thread or any other) as one CRITICAL record,
    instead of Python's multi-line traceback on stderr."""
    crash = logging.getLogger("occ.uncaught")

    def on_main(
        kind: type[BaseException], error: BaseException, trace: TracebackType | None
    ) -> None:
        crash.critical("uncaught exception", exc_info=(kind, error, trace))

    def on_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit or args.exc_value is None:
            return
        name = args.thread.name if args.thread is not None else "?"
        crash.critical(
            "uncaught exception in thread %s",
            name,
            exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
        )

    sys.excepthook = on_main
    threading.excepthook = on_thread


def log(
    event: str,
    *,
    level: int = logging.INFO,
    exc_info: BaseException | None = None,
    **fields: Any,
) -> None:
    """Write one event; only allow-listed fields are kept (``exc_info``: its traceback too)."""
    emit(_logger, event, level, exc_info=exc_info, **fields)


def emit(
    logger: logging.Logger,
    event: str,
    level: int,
    /,
    exc_info: BaseException | None = None,
    **fields: Any,
) -> None:
    """Write one event on ``logger`` (gunicorn's access log, for one); only allowed fields,
    and with ``exc_info`` the exception's class and traceback (URL passwords masked).

    The record's message is the event's JSON too (for in-process readers of messages, such as
    ``occ dev``'s own log); handlers format it from ``EVENT_ATTRIBUTE``.
    """
    if not logger.isEnabledFor(level):
        return
    kept = {key: value for key, value in fields.items() if key in ALLOWED_FIELDS}
    message = {
        "event": event,
        "service": service(),
        "time": _timestamp(dt.datetime.now(dt.UTC).timestamp()),
        "level": logging.getLevelName(level).lower(),
        **kept,
    }
    logger.log(
        level,
        json.dumps(message, default=str, separators=(",", ":")),
        exc_info=exc_info,
        extra={EVENT_ATTRIBUTE: {"event": event, **kept}},
    )
