"""occ's one log format: events keep only allowed fields, every record is one JSON line."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator

import pytest

from occ.telemetry import observability


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """The records that reach the ``occ`` logger while the test runs."""
    found: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(record)

    logger, handler = logging.getLogger("occ"), Collect()
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield found
    logger.removeHandler(handler)
    logger.setLevel(previous)


def _format(record: logging.LogRecord) -> dict[str, object]:
    line = observability.JsonFormatter("occ-test").format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert isinstance(parsed, dict)
    return parsed


def test_an_event_keeps_only_allowed_fields(records: list[logging.LogRecord]) -> None:
    observability.log("worker.claimed", count=2, token="secret-token", level=logging.WARNING)
    [record] = records
    line = _format(record)
    assert set(line) == {"time", "level", "service", "logger", "event", "count"}
    assert (line["event"], line["count"], line["level"]) == ("worker.claimed", 2, "warning")
    assert (line["service"], line["logger"]) == ("occ-test", "occ")
    assert "secret-token" not in json.dumps(line)
    # the message is the event's JSON too, for in-process readers of messages
    assert json.loads(record.getMessage())["event"] == "worker.claimed"


def test_a_foreign_record_is_a_message_with_url_passwords_masked() -> None:
    record = logging.makeLogRecord(
        {
            "name": "celery.beat",
            "levelno": 20,
            "levelname": "INFO",
            "msg": "broker %s",
            "args": ("redis://:hunter2@redis:6379/0",),
        }
    )
    line = _format(record)
    assert line["message"] == "broker redis://:***@redis:6379/0"
    assert line["logger"] == "celery.beat" and line["level"] == "info"
    assert str(line["time"]).endswith("+00:00")


def test_an_exception_is_one_line_with_its_traceback_in_a_field() -> None:
    try:
        raise RuntimeError("cannot reach postgresql://occ:pw-9f2@db/occ")
    except RuntimeError:
        record = logging.makeLogRecord(
            {
                "name": "gunicorn.error",
                "levelno": 40,
                "levelname": "ERROR",
                "msg": "boom",
                "exc_info": sys.exc_info(),
            }
        )
    line = _format(record)
    assert line["error"] == "RuntimeError"
    traceback = str(line["traceback"])
    assert traceback.startswith("Traceback (most recent call last):")
    assert "postgresql://occ:***@db/occ" in traceback and "pw-9f2" not in traceback


def test_configure_installs_one_handler_at_the_level(
    capsys: pytest.CaptureFixture[str], records: list[logging.LogRecord]
) -> None:
    root = logging.getLogger()
    previous = root.level
    try:
        observability.configure("occ-one", "WARNING")
        observability.configure("occ-two", "WARNING")
        handlers = [h for h in root.handlers if isinstance(h, observability._JsonLines)]
        assert len(handlers) == 1
        logging.getLogger("occ").setLevel(logging.NOTSET)
        observability.log("worker.health", count=1)
        observability.log("worker.error", level=logging.ERROR, code="X")
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
        assert [(line["event"], line["service"]) for line in lines] == [("worker.error", "occ-two")]
    finally:
        for handler in [h for h in root.handlers if isinstance(h, observability._JsonLines)]:
            root.removeHandler(handler)
        root.setLevel(previous)
