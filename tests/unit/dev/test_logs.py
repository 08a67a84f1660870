"""``occ dev``'s log files: appended across starts, rotated by size, JSON events kept verbatim."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

from occ.dev import home, logs
from occ.drivers.compute.local import logfiles
from occ.settings.config import Settings
from occ.telemetry import observability


def test_a_log_is_appended_to_by_a_second_writer(tmp_path: Path) -> None:
    path = tmp_path / "api.log"
    first = logs.RotatingLog(path)
    first.write(b"first start\n")
    first.close()
    second = logs.RotatingLog(path)
    second.write(b"second start\n")
    second.close()
    assert path.read_bytes() == b"first start\nsecond start\n"


def test_a_log_rotates_by_size_and_keeps_three_files(tmp_path: Path) -> None:
    path = tmp_path / "drivers.log"
    log = logs.RotatingLog(path, max_bytes=100, files=3)
    for number in range(10):
        log.write(f"{number}".encode() * 60 + b"\n")
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "drivers.log",
        "drivers.log.1",
        "drivers.log.2",
    ]
    assert path.read_bytes().startswith(b"9")
    assert logfiles.rotated(path, 1).read_bytes().startswith(b"8")
    assert logfiles.rotated(path, 2).read_bytes().startswith(b"7")
    assert all(p.stat().st_size <= 100 for p in tmp_path.iterdir())


def test_a_child_pipe_is_copied_until_its_end(tmp_path: Path) -> None:
    path = tmp_path / "beat.log"
    log = logs.RotatingLog(path)
    read_end, write_end = os.pipe()
    copier = log.copy_from(os.fdopen(read_end, "rb"), name="test-copier")
    os.write(write_end, b"line one\n")
    os.write(write_end, b"line two\n")
    os.close(write_end)
    copier.join(5)
    assert not copier.is_alive()
    log.close()
    assert path.read_bytes() == b"line one\nline two\n"


def test_dev_log_appends_json_lines_for_events_and_messages_alike(tmp_path: Path) -> None:
    path = tmp_path / "dev.log"
    events = logging.getLogger("occ")  # observability's logger; occ.dev's records pass it too
    for start in ("first", "second"):
        handler = logs.file_handler(path)
        events.addHandler(handler)
        previous = events.level
        events.setLevel(logging.INFO)
        try:
            logging.getLogger("occ.dev").warning("%s start", start)
            observability.log("dev.child-restarted", child="api", exitStatus=-9, password="x")
        finally:
            events.removeHandler(handler)
            events.setLevel(previous)
            handler.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 4, lines
    for line, start in ((lines[0], "first"), (lines[2], "second")):
        record = json.loads(line)
        assert record["message"] == f"{start} start"
        assert (record["level"], record["logger"], record["service"]) == (
            "warning",
            "occ.dev",
            logs.SERVICE,
        )
        assert record["time"]
    for line in (lines[1], lines[3]):
        event = json.loads(line)
        assert event["event"] == "dev.child-restarted"
        assert event["child"] == "api" and event["exitStatus"] == -9
        assert "password" not in event


def test_every_log_file_is_its_owners_alone(tmp_path: Path) -> None:
    older = tmp_path / "older.log"
    older.write_bytes(b"x\n")
    older.chmod(0o644)
    log = logs.RotatingLog(older, max_bytes=10)
    log.write(b"first line\n")  # narrows the older file
    assert stat.S_IMODE(older.stat().st_mode) == 0o600
    log.write(b"second line\n")  # rotates: the new file is created 0600
    log.close()
    for path in (older, logfiles.rotated(older, 1)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    handler = logs.file_handler(tmp_path / "dev.log")
    handler.emit(logging.LogRecord("occ", logging.INFO, __file__, 1, "started", None, None))
    handler.close()
    assert stat.S_IMODE((tmp_path / "dev.log").stat().st_mode) == 0o600


def test_the_homes_directories_are_its_owners_alone(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(mode=0o755)
    made = home.Home(tmp_path / "home")
    made.create()
    for directory in (made.root, made.logs, made.run):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_the_settings_set_the_limits_of_every_log(tmp_path: Path) -> None:
    env = {"OCC_ENV": "development", "OCC_LOG_FILE_MAX_BYTES": "300", "OCC_LOG_FILE_BACKUPS": "1"}
    limits = logs.Limits.of(Settings.from_env(env))
    assert limits == logs.Limits(max_bytes=300, files=2)
    assert logs.Limits.of(Settings()) == logs.Limits(max_bytes=10 * 1024 * 1024, files=3)

    child = logs.RotatingLog.limited(tmp_path / "api.log", limits)
    handler = logs.file_handler(tmp_path / "dev.log", limits)
    record = logging.LogRecord("occ.dev", logging.INFO, __file__, 1, "x" * 80, None, None)
    try:
        for _ in range(20):
            child.write(b"y" * 79 + b"\n")
            handler.emit(record)
    finally:
        child.close()
        handler.close()
    for name in ("api.log", "dev.log"):
        kept = sorted(path.name for path in tmp_path.glob(f"{name}*"))
        assert kept == [name, f"{name}.1"]
        assert all((tmp_path / file).stat().st_size <= 300 for file in kept)
