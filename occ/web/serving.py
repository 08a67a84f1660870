"""occ under gunicorn: its errors are problem+json too, its log lines are occ's JSON lines.

gunicorn refuses a request it cannot parse (a request line or header fields over its limits, a
malformed line, header or chunk) before the Flask app sees it, and answers with an HTML page
that quotes the offending input. ``ProblemWorker`` answers those with
``application/problem+json`` carrying a status, a title and a stable code (``URI_TOO_LONG``,
``REQUEST_HEADER_FIELDS_TOO_LARGE``, ``MALFORMED_REQUEST``, ...), and never any part of the
request. Every other error goes to gunicorn's own handling.

``ProblemWorker`` is gunicorn's gevent worker: each connection is a greenlet, so a slow or idle
client costs a greenlet and a socket, never a worker (gunicorn's sync worker, which occ ran
before, is held by one client sending its request a byte at a time). Three timeouts bound what
a connection may hold: its request line and header fields must arrive within
``Settings.api_header_timeout_ms`` (so must the next request on a kept-alive connection), closing
it quietly; its whole body within ``Settings.api_body_timeout_ms`` of the app's first read of it
(``BodyDeadline``), answering 408 ``REQUEST_TIMEOUT``; and each read of its body or write of its
answer must progress within ``Settings.api_read_timeout_ms``, closing it. Writing the answer has
no total bound: a streamed answer (a log follow) lasts as long as its view lets it. A worker
serves at most gunicorn's ``--worker-connections`` at once.

``JsonLogger`` is gunicorn's logger with occ's JSON format (``occ.telemetry.observability``) on its
error log and its access log (when one is configured), at ``Settings.log_level``; an access line is
the ``http.access`` event (method, path without the query, status, duration), never headers.

Run gunicorn with ``--worker-class occ.web.serving.ProblemWorker`` (``WORKER_CLASS``) and
``--logger-class occ.web.serving.JsonLogger`` (``LOGGER_CLASS``): ``CLASSES``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from gunicorn import glogging, util
from gunicorn.http import errors as http_errors
from gunicorn.workers import base_async, ggevent

from occ.foundation import errors
from occ.settings.config import Settings
from occ.telemetry import observability
from occ.web import problems

WORKER_CLASS: Final = "occ.web.serving.ProblemWorker"
"""The value of gunicorn's ``--worker-class`` for occ's API."""
LOGGER_CLASS: Final = "occ.web.serving.JsonLogger"
"""The value of gunicorn's ``--logger-class`` for occ's API."""
CLASSES: Final = ("--worker-class", WORKER_CLASS, "--logger-class", LOGGER_CLASS)
"""Both classes as gunicorn arguments: every gunicorn command line of occ's API has them."""
SERVICE: Final = "occ-api"


@dataclass(frozen=True)
class Refusal:
    """How occ answers one kind of request gunicorn could not parse."""

    status: int
    reason: str
    code: str
    detail: str


class BodyTimeout(BaseException):
    """A request's body did not arrive within ``Settings.api_body_timeout_ms``.

    A ``BaseException``, as ``gevent.Timeout`` is: no ``except Exception`` in the app takes it
    for its own error, so it reaches ``ProblemWorker.handle_error``.
    """

    def __init__(self, answering: bool) -> None:
        super().__init__("the request's body did not arrive in time")
        self.answering = answering
        """Whether the app had begun its answer (then the connection closes unanswered)."""


_MALFORMED: Final = Refusal(400, "Bad Request", "MALFORMED_REQUEST", "the request is malformed")

REFUSALS: Final[tuple[tuple[type[BaseException], Refusal], ...]] = (
    (
        BodyTimeout,
        Refusal(
            408, "Request Timeout", "REQUEST_TIMEOUT", "the request's body did not arrive in time"
        ),
    ),
    (
        http_errors.LimitRequestLine,
        Refusal(414, "URI Too Long", "URI_TOO_LONG", "the request line is too long"),
    ),
    (
        http_errors.LimitRequestHeaders,
        Refusal(
            431,
            "Request Header Fields Too Large",
            "REQUEST_HEADER_FIELDS_TOO_LARGE",
            "the request's header fields are too large or too many",
        ),
    ),
    (
        http_errors.ExpectationFailed,
        Refusal(417, "Expectation Failed", "EXPECTATION_FAILED", "the expectation is not met"),
    ),
    (
        http_errors.UnsupportedTransferCoding,
        Refusal(
            501,
            "Not Implemented",
            "UNSUPPORTED_TRANSFER_CODING",
            "the transfer coding is not supported",
        ),
    ),
    (http_errors.InvalidRequestLine, _MALFORMED),
    (http_errors.InvalidRequestMethod, _MALFORMED),
    (http_errors.InvalidHTTPVersion, _MALFORMED),
    (http_errors.InvalidHeader, _MALFORMED),
    (http_errors.InvalidHeaderName, _MALFORMED),
    (http_errors.ObsoleteFolding, _MALFORMED),
    (http_errors.InvalidChunkSize, _MALFORMED),
    (http_errors.ChunkMissingTerminator, _MALFORMED),
    (http_errors.InvalidChunkExtension, _MALFORMED),
    (http_errors.InvalidProxyLine, _MALFORMED),
    (http_errors.InvalidSchemeHeaders, _MALFORMED),
)
"""Request-parse errors (and a late body) and their answers; the first matching class wins."""


def refusal_for(error: BaseException) -> Refusal | None:
    """occ's answer to a request-parse error, or ``None`` when gunicorn keeps it."""
    for kind, refusal in REFUSALS:
        if isinstance(error, kind):
            return refusal
    return None


def response_bytes(refusal: Refusal, request_id: str) -> bytes:
    """The whole HTTP/1.1 response: problem+json, and the connection closed after it."""
    body = json.dumps(
        problems.document(refusal.status, refusal.code, refusal.detail, request_id),
        separators=(",", ":"),
    ).encode()
    head = (
        f"HTTP/1.1 {refusal.status} {refusal.reason}\r\n"
        "Connection: close\r\n"
        f"Content-Type: {problems.CONTENT_TYPE}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"X-Request-Id: {request_id}\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body


@dataclass(frozen=True)
class ReadTimeouts:
    """How long a connection may keep the server waiting, in seconds."""

    header_s: float
    read_s: float
    body_s: float

    @classmethod
    def of(cls, settings: Settings) -> ReadTimeouts:
        return cls(
            settings.api_header_timeout_ms / 1000,
            settings.api_read_timeout_ms / 1000,
            settings.api_body_timeout_ms / 1000,
        )


DEFAULT_TIMEOUTS: Final = ReadTimeouts.of(Settings())
"""The timeouts when the settings are invalid (the app then says why and refuses to serve)."""


T = TypeVar("T")


class Body(Protocol):
    """The reads of a ``wsgi.input`` (PEP 3333)."""

    def read(self, size: int | None = ..., /) -> bytes: ...

    def readline(self, size: int | None = ..., /) -> bytes: ...

    def readlines(self, size: int | None = ..., /) -> list[bytes]: ...


class DeadlineInput:
    """``wsgi.input`` whose reads all end within ``seconds`` of the first one's start: a read
    still waiting for the client then raises ``BodyTimeout``."""

    def __init__(self, body: Body, seconds: float) -> None:
        self._body = body
        self._seconds = seconds
        self._deadline: float | None = None
        self.answering = False
        """Set once the app has called ``start_response``."""

    def read(self, size: int | None = None) -> bytes:
        return self._within(self._body.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._within(self._body.readline, size)

    def readlines(self, size: int | None = None) -> list[bytes]:
        return self._within(self._body.readlines, size)

    def __iter__(self) -> DeadlineInput:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def _within(self, read: Callable[[int | None], T], size: int | None) -> T:
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self._seconds
        late = BodyTimeout(self.answering)
        if now >= self._deadline:
            raise late
        with ggevent.gevent.Timeout(self._deadline - now, late):
            return read(size)


class BodyDeadline:
    """WSGI middleware bounding the time the app waits for a request's body (``DeadlineInput``);
    the answer's writing is not bounded by it."""

    def __init__(self, app: Callable[..., Iterable[bytes]], seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        body = DeadlineInput(environ["wsgi.input"], self.seconds)
        environ["wsgi.input"] = body

        def answering(*args: Any) -> Any:
            body.answering = True
            return start_response(*args)

        return self.app(environ, answering)


class ProblemWorker(ggevent.GeventWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's gevent worker with read timeouts, answering parse errors (and a body past its
    deadline) with problem+json."""

    timeouts: ReadTimeouts = DEFAULT_TIMEOUTS
    wsgi: Callable[..., Iterable[bytes]]
    """The app gunicorn calls: occ's, under ``BodyDeadline``."""

    def init_process(self) -> None:
        self.timeouts = _timeouts()
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = BodyDeadline(self.wsgi, self.timeouts.body_s)

    def timeout_ctx(self) -> Any:
        """The bound on reading one request's line and header fields: the connection closes
        quietly when it passes (gunicorn reads no request then)."""
        return ggevent.gevent.Timeout(self.timeouts.header_s, False)

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        # what the gevent worker's own ``handle`` does (a blocking socket), with a bound on it
        client.settimeout(self.timeouts.read_s)
        base_async.AsyncWorker.handle(self, listener, client, addr)

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        refusal = refusal_for(exc)
        if refusal is None:
            super().handle_error(req, client, addr, exc)
            return
        request_id = f"req_{uuid.uuid4()}"
        # never the request line or a header: they may carry a credential
        where: dict[str, Any] = {} if req is None else {"method": req.method, "path": req.path}
        observability.log(
            "http.rejected",
            level=logging.WARNING,
            requestId=request_id,
            status=refusal.status,
            code=refusal.code,
            error=type(exc).__name__,
            **where,
        )
        if isinstance(exc, BodyTimeout) and exc.answering:
            return  # part of the app's answer may be out: the connection closes unanswered
        with contextlib.suppress(OSError):  # the client is gone: nothing to answer
            util.write_nonblock(client, response_bytes(refusal, request_id))


class JsonLogger(glogging.Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's logger writing occ's JSON lines at ``Settings.log_level``."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = observability.JsonFormatter(SERVICE)
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                if getattr(handler, "_gunicorn", False):  # gunicorn's, not a logconfig's
                    handler.setFormatter(formatter)
        self.error_log.setLevel(_level())
        observability.capture_uncaught()

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        status = str(resp.status).split(None, 1)[0]
        observability.emit(
            self.access_log,
            "http.access",
            logging.INFO,
            method=environ.get("REQUEST_METHOD"),
            path=environ.get("PATH_INFO"),
            status=int(status) if status.isdigit() else status,
            durationMs=round(request_time.total_seconds() * 1000, 1),
        )


def _timeouts() -> ReadTimeouts:
    """The read timeouts of ``Settings``; the defaults when the settings are invalid (an unset
    ``OCC_ENV`` is refused by the start-up checks, not here)."""
    try:
        return ReadTimeouts.of(Settings.from_env(require=False))
    except errors.OccError:
        return DEFAULT_TIMEOUTS


def _level() -> str:
    """``Settings.log_level``; ``INFO`` when the settings are invalid (the app says why)."""
    try:
        return Settings.from_env(require=False).log_level
    except errors.OccError:
        return "INFO"
