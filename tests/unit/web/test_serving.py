"""occ's gunicorn logger: gunicorn's error and access lines are occ's JSON lines."""

from __future__ import annotations

import datetime as dt
import json
import logging
from types import SimpleNamespace

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
