"""Resuming an export file: the last complete record's sequence, a line cut short removed."""

from __future__ import annotations

import json
from pathlib import Path

from occ.cli import audit_archive


def _records(*sequences: int) -> str:
    return "".join(json.dumps({"sequence": n, "pad": "x" * 50_000}) + "\n" for n in sequences)


def test_a_missing_or_empty_file_starts_from_the_beginning(tmp_path: Path) -> None:
    assert audit_archive.last_sequence(tmp_path / "none.jsonl") is None
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert audit_archive.last_sequence(empty) is None


def test_the_last_complete_record_is_where_the_export_resumes(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text(_records(3, 7, 12))  # records longer than one read block
    assert audit_archive.last_sequence(path) == 12
    assert path.read_text() == _records(3, 7, 12)


def test_a_record_cut_short_is_removed_and_exported_again(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text(_records(3, 7) + '{"sequence": 12, "pad": "xx')
    assert audit_archive.last_sequence(path) == 7
    assert path.read_text() == _records(3, 7)

    only_partial = tmp_path / "partial.jsonl"
    only_partial.write_text('{"sequence": 1')
    assert audit_archive.last_sequence(only_partial) is None
    assert only_partial.read_text() == ""
