"""occ's gunicorn logger: gunicorn's error and access lines are occ's JSON lines; the deadline
on reading a request's body."""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import gevent
import pytest
from gunicorn.config import Config

from occ.telemetry import observability
from occ.web import serving


def _logger(monkeypatch: pytest.MonkeyPatch) -> serving.JsonLogger:
    """gunicorn's logger with an access log on (the current) stdout, at OCC_LOG_LEVEL=warning."""
    monkeypatch.setenv("OCC_LOG_LEVEL", "warning")
    monkeypatch.setattr(observability, "capture_uncaught", lambda: None)
    config = Config()
    config.set("accesslog", "-")
    return serving.JsonLogger(config)


def test_error_and_access_log_use_occs_format_at_occ_log_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger = _logger(monkeypatch)
    for log in (logger.error_log, logger.access_log):
        ours = [handler for handler in log.handlers if getattr(handler, "_gunicorn", False)]
        assert ours
        assert all(isinstance(handler.formatter, observability.JsonFormatter) for handler in ours)
    assert logger.error_log.level == logging.WARNING


def test_an_access_line_is_the_http_access_event_without_query_or_headers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = _logger(monkeypatch)
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/v1/agents",
        "QUERY_STRING": "token=secret-query",
        "RAW_URI": "/v1/agents?token=secret-query",
        "HTTP_AUTHORIZATION": "Bearer secret-header",
    }
    response = SimpleNamespace(status="200 OK", headers=[], sent=12)
    logger.access(response, SimpleNamespace(headers=[]), environ, dt.timedelta(milliseconds=7))
    [line] = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert line["event"] == "http.access" and line["logger"] == "gunicorn.access"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/v1/agents", 200)
    assert line["durationMs"] == 7.0 and line["service"] == "occ-api"
    assert "secret" not in json.dumps(line)


class _Body:
    """A request body whose bytes arrive ``delay_s`` after each read asks for them."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def read(self, size: int | None = None) -> bytes:
        gevent.sleep(self.delay_s)
        return b"x"

    readline = read

    def readlines(self, size: int | None = None) -> list[bytes]:
        return [self.read()]


def test_a_read_still_waiting_at_the_deadline_raises_body_timeout() -> None:
    body = serving.DeadlineInput(_Body(delay_s=30), seconds=0.05)
    began = time.monotonic()
    with pytest.raises(serving.BodyTimeout) as raised:
        body.read(10)
    assert time.monotonic() - began < 5
    assert not raised.value.answering
    assert serving.refusal_for(raised.value) == serving.REFUSALS[0][1]
    assert serving.REFUSALS[0][1].code == "REQUEST_TIMEOUT"


def test_the_deadline_counts_from_the_first_read_and_binds_every_later_one() -> None:
    body = serving.DeadlineInput(_Body(delay_s=0), seconds=0.05)
    gevent.sleep(0.1)  # the app worked before it read: not the client's time
    assert body.read() == b"x"
    gevent.sleep(0.1)
    with pytest.raises(serving.BodyTimeout):
        body.readline()


def test_the_deadline_binds_reading_the_request_not_writing_the_answer() -> None:
    """An answer streamed for longer than the deadline is not cut; a read of the body while
    answering still is, marked so that nothing more is written."""
    reads: list[Any] = []

    def app(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        reads.append(environ["wsgi.input"])
        environ["wsgi.input"].read()
        start_response("200 OK", [])
        for _ in range(3):
            gevent.sleep(0.05)
            yield b"line\n"

    answer = serving.BodyDeadline(app, seconds=0.05)({"wsgi.input": _Body(0)}, lambda *_: None)
    assert b"".join(answer) == b"line\n" * 3
    with pytest.raises(serving.BodyTimeout) as raised:
        reads[0].read()
    assert raised.value.answering
