"""The effect journal: ``started`` and ``ended`` lines, aborted effects included."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import journal


def _operation(abort: threading.Event | None = None) -> base.Operation:
    return base.Operation(work_id="work_1", claim_token="token_1", abort=abort or threading.Event())


def _phases(effects: journal.Journal) -> list[tuple[str, str, str | None]]:
    return [(e["op"], e["phase"], e.get("outcome")) for e in effects.entries()]


def test_an_effect_journals_started_and_ended_with_its_claim(tmp_path: Path) -> None:
    effects = journal.Journal(tmp_path / "root" / "effects.jsonl")
    assert effects.entries() == []
    with effects.effect(_operation(), "ensure_namespace", {"namespaceId": "ns_1"}):
        assert _phases(effects) == [("ensure_namespace", "started", None)]
    started, ended = effects.entries()
    assert started["token"] == ended["token"] == "token_1"
    assert started["workId"] == ended["workId"] == "work_1"
    assert started["namespaceId"] == ended["namespaceId"] == "ns_1"
    assert started["pid"] == os.getpid()
    assert ended["outcome"] == "done"
    assert started["startedAt"] == ended["startedAt"] <= ended["endedAt"]
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
