"""The effect journal: ``started`` and ``ended`` lines, aborted effects included."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import journal, logfiles


def _operation(abort: threading.Event | None = None) -> base.Operation:
    return base.Operation(
        work_id="work_1", claim_token="token_1", abort=abort or threading.Event(), attempt=2
    )


def _phases(effects: journal.Journal) -> list[tuple[str, str, str | None]]:
    return [(e["op"], e["phase"], e.get("outcome")) for e in effects.entries()]


def test_an_effect_journals_started_and_ended_with_its_claim(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "root" / "effects.jsonl")
    assert effects.entries() == []
    with effects.effect(_operation(), "ensure_namespace", {"namespaceId": "ns_1"}):
        assert _phases(effects) == [("ensure_namespace", "started", None)]
    started, ended = effects.entries()
    assert started["token"] == ended["token"] == "token_1"
    assert started["attempt"] == ended["attempt"] == 2
    assert started["workId"] == ended["workId"] == "work_1"
    assert started["namespaceId"] == ended["namespaceId"] == "ns_1"
    assert started["pid"] == os.getpid()
    assert ended["outcome"] == "done"
    assert started["startedAt"] == ended["startedAt"] <= ended["endedAt"]
    assert started["startedMonotonic"] == ended["startedMonotonic"] <= ended["endedMonotonic"]
    assert stat.S_IMODE(effects.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(effects.path.parent.stat().st_mode) == 0o700


def test_a_failed_effect_ends_with_the_exception_class(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "effects.jsonl")
    with pytest.raises(base.TransientDriverError), effects.effect(_operation(), "stop", {}):
        raise base.TransientDriverError("BUSY")
    assert _phases(effects) == [
        ("stop", "started", None),
        ("stop", "ended", "TransientDriverError"),
    ]


def test_an_effect_aborted_during_its_delay_ends_at_once(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "effects.jsonl")
    abort = threading.Event()
    timer = threading.Timer(0.1, abort.set)
    timer.start()
    body_ran = False
    try:
        with (
            pytest.raises(base.Aborted),
            effects.effect(_operation(abort), "prepare_revision", {}, delay_s=30),
        ):
            body_ran = True
    finally:
        timer.cancel()
    assert not body_ran
    assert _phases(effects) == [
        ("prepare_revision", "started", None),
        ("prepare_revision", "ended", "Aborted"),
    ]
    started, ended = effects.entries()
    assert ended["endedAt"] - started["startedAt"] < 10


def test_an_effect_aborted_before_it_starts_journals_nothing(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "effects.jsonl")
    abort = threading.Event()
    abort.set()
    with pytest.raises(base.Aborted), effects.effect(_operation(abort), "retire_revision", {}):
        pytest.fail("the body of an aborted effect ran")
    assert effects.entries() == []


def test_lines_of_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "effects.jsonl")
    padding = "x" * 2000

    def write(writer: int) -> None:
        for number in range(50):
            effects.record({"writer": writer, "number": number, "padding": padding})

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    entries = effects.entries()  # every line parses as one whole entry
    assert sorted((e["writer"], e["number"]) for e in entries) == [
        (writer, number) for writer in range(4) for number in range(50)
    ]


def _record(path: Path, rotation: logfiles.Rotation, writer: int, count: int) -> None:
    effects = journal.Journal(path, rotation)
    for number in range(count):
        effects.record({"writer": writer, "number": number, "padding": "x" * 150})


def _processes(path: Path, rotation: logfiles.Rotation, count: int) -> None:
    """Four processes recording ``count`` entries each at once, as prefork workers do."""
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=_record, args=(path, rotation, writer, count)) for writer in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0


def test_processes_writing_past_the_limit_rotate_it_without_losing_a_line(tmp_path: Path) -> None:
    path = tmp_path / "effects.jsonl"
    rotation = logfiles.Rotation(max_bytes=5_000, backups=100)  # room for every line
    _processes(path, rotation, 100)

    entries = journal.Journal(path, rotation).entries()
    assert sorted((e["writer"], e["number"]) for e in entries) == [
        (writer, number) for writer in range(4) for number in range(100)
    ]
    for writer in range(4):  # each writer's lines in its order, across the files
        assert [e["number"] for e in entries if e["writer"] == writer] == list(range(100))
    sizes = [file.stat().st_size for file in logfiles.files(path, rotation)]
    assert len(sizes) > 10 and max(sizes) <= rotation.max_bytes


def test_the_journal_keeps_its_newest_files_only(tmp_path: Path) -> None:
    path = tmp_path / "effects.jsonl"
    rotation = logfiles.Rotation(max_bytes=5_000, backups=2)
    _processes(path, rotation, 100)

    files = logfiles.files(path, rotation)
    assert [file.name for file in files] == ["effects.jsonl.2", "effects.jsonl.1", "effects.jsonl"]
    assert sum(file.stat().st_size for file in files) <= 3 * rotation.max_bytes
    entries = journal.Journal(path, rotation).entries()
    assert 0 < len(entries) < 400
    for writer in range(4):  # what is kept of each writer is its newest lines, in order
        numbers = [e["number"] for e in entries if e["writer"] == writer]
        assert numbers == list(range(100 - len(numbers), 100))
