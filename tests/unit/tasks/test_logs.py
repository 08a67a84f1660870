"""Celery's lines in occ's format: periodic ticks and run_work at DEBUG, terminal notices as
JSON lines."""

from __future__ import annotations

import json
import logging

import pytest

from occ.tasks import logs


def _record(name: str, msg: str, args: object) -> logging.LogRecord:
    record = logging.LogRecord(name, logging.INFO, __file__, 1, msg, None, None)
    record.args = args  # type: ignore[assignment]  # a mapping, as Celery's trace passes
    return record


@pytest.mark.parametrize(
    ("record", "demoted"),
    [
        (
            _record("celery.app.trace", "Task %(name)s[%(id)s] succeeded", {"name": "occ.claim"}),
            True,
        ),
        (
            _record(
                "celery.worker.strategy", "Task %(name)s received", {"name": "occ.recover_stale"}
            ),
            True,
        ),
        (
            _record(
                "celery.beat",
                "Sending due task %s (%s)",
                ("occ.observe_runtimes", "occ.observe_runtimes"),
            ),
            True,
        ),
        (
            _record("celery.worker.request", "Discarding revoked task: %s[%s]", ("occ.claim", "1")),
            True,
        ),
        (
            _record(
                "celery.app.trace", "Task %(name)s[%(id)s] succeeded", {"name": "occ.run_work"}
            ),
            True,
        ),
        (
            _record("celery.worker.strategy", "Task %(name)s received", {"name": "occ.other"}),
            False,
        ),
        (_record("celery.beat", "beat: Starting...", ()), False),
    ],
)
def test_only_the_quiet_tasks_lines_are_lowered_to_debug(
    record: logging.LogRecord, demoted: bool
) -> None:
    assert logs.TaskLinesAtDebug().filter(record)
    assert record.levelno == (logging.DEBUG if demoted else logging.INFO)
    assert record.levelname == logging.getLevelName(record.levelno)


def test_a_lowered_line_is_dropped_at_info(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("celery.app.trace")
    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO)
    quiet = logs.TaskLinesAtDebug()
    logger.addFilter(quiet)
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        logger.info("Task %(name)s succeeded", {"name": "occ.claim"})
        logger.info("Task %(name)s succeeded", {"name": "occ.other"})
    finally:
        logger.removeFilter(quiet)
        logger.removeHandler(handler)
        logger.setLevel(previous)
    lines = capsys.readouterr().err.splitlines()
    assert "Task occ.other succeeded" in lines
    assert not any("occ.claim" in line for line in lines)


def test_celerys_terminal_notice_is_one_json_line(capfd: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.INFO)
    try:
        logs.say("\nworker: Warm shutdown (MainProcess)\n")
    finally:
        root.setLevel(previous)
    [line] = capfd.readouterr().err.splitlines()
    parsed = json.loads(line)
    assert parsed["message"] == "worker: Warm shutdown (MainProcess)"
    assert (parsed["level"], parsed["logger"]) == ("info", "celery.apps.worker")


def test_outside_a_celery_command_the_service_is_occ_celery() -> None:
    assert logs.service_name() == "occ-celery"
