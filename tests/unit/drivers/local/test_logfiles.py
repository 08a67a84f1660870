"""Size-rotated log files: appends past the limit, the writer process behind a pipe, modes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from occ.drivers.compute.local import logfiles
from tests.support.processes import wait_for

ROTATION = logfiles.Rotation(max_bytes=1_000, backups=2)


def _line(number: int) -> bytes:
    """Line ``number``: 100 bytes with its newline, numbered so that order can be checked."""
    return f"line {number:06d} ".encode().ljust(99, b"x") + b"\n"


def _kept(path: Path, rotation: logfiles.Rotation) -> list[bytes]:
    """Every line of the log at ``path``, oldest first, each file checked to end a line."""
    lines = []
    for file in logfiles.files(path, rotation):
        data = file.read_bytes()
        assert not data or data.endswith(b"\n"), f"{file.name} ends inside a line"
        lines.extend(data.splitlines(keepends=True))
    return lines


def _sizes(path: Path) -> dict[str, int]:
    return {file.name: file.stat().st_size for file in path.parent.glob(f"{path.name}*")}


def test_appends_past_the_limit_rotate_and_keep_the_newest_lines(tmp_path: Path) -> None:
    path = tmp_path / "effects.jsonl"
    for number in range(95):
        logfiles.append(path, _line(number), ROTATION)

    sizes = _sizes(path)
    assert set(sizes) == {"effects.jsonl", "effects.jsonl.1", "effects.jsonl.2"}
    assert max(sizes.values()) <= ROTATION.max_bytes
    assert sum(sizes.values()) <= (ROTATION.backups + 1) * ROTATION.max_bytes
    # the newest lines, in order and whole: ten to a full file, five in the current one
    assert _kept(path, ROTATION) == [_line(number) for number in range(70, 95)]
    assert path.read_bytes() == b"".join(_line(number) for number in range(90, 95))


def test_one_append_of_many_lines_is_split_between_files_at_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    logfiles.append(path, b"".join(_line(number) for number in range(25)), ROTATION)
    assert [size for _, size in sorted(_sizes(path).items())] == [500, 1_000, 1_000]
    assert _kept(path, ROTATION) == [_line(number) for number in range(25)]


def test_a_line_longer_than_a_file_is_written_whole_and_alone(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    logfiles.append(path, _line(1), ROTATION)
    long = b"y" * 2_500 + b"\n"
    logfiles.append(path, long + _line(2), ROTATION)
    assert logfiles.rotated(path, 2).read_bytes() == _line(1)
    assert logfiles.rotated(path, 1).read_bytes() == long
    assert path.read_bytes() == _line(2)


def test_a_rotation_needs_a_size_and_a_rotated_file() -> None:
    for max_bytes, backups in ((0, 2), (1_000, 0)):
        with pytest.raises(ValueError, match="at least one"):
            logfiles.Rotation(max_bytes=max_bytes, backups=backups)


@pytest.mark.usefixtures("permissive_umask")
def test_the_files_and_the_lock_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    path.write_bytes(_line(0))
    path.chmod(0o644)  # an older, wider file is narrowed and appended to
    for number in range(1, 30):
        logfiles.append(path, _line(number), ROTATION)
    assert _kept(path, ROTATION) == [_line(number) for number in range(30)]
    modes = {file.name: stat.S_IMODE(file.stat().st_mode) for file in tmp_path.iterdir()}
    assert modes == {
        "gateway.log": 0o600,
        "gateway.log.1": 0o600,
        "gateway.log.2": 0o600,
        ".gateway.log.lock": 0o600,
    }


def _writer(path: Path, rotation: logfiles.Rotation) -> tuple[int, int]:
    """The write end of a new writer's pipe and the writer's pid (the only process whose
    command line names ``path``)."""
    write_end = logfiles.start_writer(path, rotation)

    def named() -> list[int]:
        return [pid for pid, argv in _processes() if str(path).encode() in argv]

    # a process's command line can read empty for a moment while it starts (seen once in a
    # full run); a writer that died would never be named and fails the wait
    [pid] = wait_for(named, timeout=10, message="the writer's command line")
    return write_end, pid


def _processes() -> list[tuple[int, list[bytes]]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((int(entry.name), (entry / "cmdline").read_bytes().split(b"\0")))
            except OSError:
                continue  # gone meanwhile
    return found


def _ended(pid: int) -> bool:
    """Whether the writer ``pid`` (a child of this process) has exited."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_the_writer_keeps_every_line_of_a_pipe_and_ends_with_it(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    wide = logfiles.Rotation(max_bytes=1_000, backups=50)
    write_end, pid = _writer(path, wide)
    assert path.exists() and path.read_bytes() == b""  # there at once, for readers
    # written in pieces that end inside lines, as a process's output arrives
    data = b"".join(_line(number) for number in range(300))
    for start in range(0, len(data), 333):
        os.write(write_end, data[start : start + 333])
    os.close(write_end)  # the gateway's end: the writer drains the pipe and exits

    wait_for(lambda: _ended(pid), timeout=10, message="the writer to end with its pipe")
    assert _kept(path, wide) == [_line(number) for number in range(300)]
    assert max(_sizes(path).values()) <= wide.max_bytes


def test_the_writer_bounds_the_log_of_a_chatty_process(tmp_path: Path) -> None:
    path = tmp_path / "gateway.log"
    write_end, pid = _writer(path, ROTATION)
    chatty = (
        "import sys\n"
        "for n in range(5000): sys.stdout.write(f'line {n:06d} '.ljust(99, 'x') + '\\n')"
    )
    subprocess.run([sys.executable, "-c", chatty], stdout=write_end, check=True, timeout=60)
    os.close(write_end)

    wait_for(lambda: _ended(pid), timeout=10, message="the writer to end with its pipe")
    sizes = _sizes(path)
    assert sum(sizes.values()) <= (ROTATION.backups + 1) * ROTATION.max_bytes
    kept = _kept(path, ROTATION)
    assert kept[-1] == _line(4999)  # the newest line is at the log's own name
    assert path.read_bytes().endswith(_line(4999))
    first = int(kept[0].split()[1])
    assert kept == [_line(number) for number in range(first, 5000)]  # a whole, ordered tail


def test_the_writer_of_a_removed_directory_ends_quietly(tmp_path: Path) -> None:
    directory = tmp_path / "revision"
    directory.mkdir()
    log = directory / "gateway.log"
    write_end, pid = _writer(log, ROTATION)
    os.write(write_end, _line(0))
    wait_for(lambda: log.read_bytes() == _line(0), timeout=10, message="the writer to copy")
    for file in directory.iterdir():
        file.unlink()
    directory.rmdir()  # a retirement removes the revision's directory
    os.write(write_end, _line(1))
    os.close(write_end)
    wait_for(lambda: _ended(pid), timeout=10, message="the writer to end")
    assert not directory.exists()  # nothing recreated
