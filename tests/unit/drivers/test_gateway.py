"""The stand-in gateway's stdin credential channel: one line into a 0600 file, or a refusal."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from occ.drivers import gateway
from occ.foundation import fingerprints


def _pipe(data: bytes, *, close: bool = True) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    if close:
        os.close(write_end)
    return read_end


def test_two_lines_become_two_0600_files(tmp_path: Path) -> None:
    target = tmp_path / "credential"
    assert gateway.receive_credential(_pipe(b"s3cret\nkey-1\nignored"), target, 5) is None
    assert target.read_bytes() == b"s3cret\n"
    key = tmp_path / fingerprints.KEY_FILE
    assert key.read_bytes() == b"key-1\n"
    for written in (target, key):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_a_credential_without_its_key_line_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "credential"
    assert gateway.receive_credential(_pipe(b"s3cret\n"), target, 5) == "incomplete"
    assert not target.exists()


def test_input_without_a_whole_line_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "credential"
    assert gateway.receive_credential(_pipe(b"partial"), target, 5) == "incomplete"
    assert not target.exists()


def test_no_line_in_time_is_a_timeout(tmp_path: Path) -> None:
    target = tmp_path / "credential"
    assert gateway.receive_credential(_pipe(b"", close=False), target, 0.05) == "timeout"
    assert not target.exists()


def test_an_overlong_line_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "credential"
    source = tmp_path / "input"
    source.write_bytes(b"x" * (gateway.MAX_CREDENTIAL_BYTES + 10) + b"\n")
    descriptor = os.open(source, os.O_RDONLY)
    try:
        assert gateway.receive_credential(descriptor, target, 5) == "too_long"
    finally:
        os.close(descriptor)
    assert not target.exists()
