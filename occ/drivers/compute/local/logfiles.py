"""Size-rotated log files of the ``local`` driver: ``effects.jsonl`` and each ``gateway.log``.

An append that would take a file past ``Rotation.max_bytes`` first rotates it: ``name`` becomes
``name.1``, ``name.1`` becomes ``name.2``, and the one past ``Rotation.backups`` is dropped. The
newest lines are always at ``name`` itself, and a log never holds more than ``backups + 1``
files of at most ``max_bytes`` each (a single line longer than that is written whole, alone in
its file). Appends and rotations of every process serialise on an ``flock`` of ``.name.lock``
beside the file; an append writes whole lines, so a line is never split between two files.

A gateway cannot rotate its own output (it holds one open file for good), and copying a live
file then truncating it loses what was written in between. So a gateway's stdout and stderr
go into a pipe, and a writer process (this file run as a script, ``start_writer``) appends what
it reads as above. The writer has a session of its own: stopping the gateway's process group
leaves it to drain the pipe, and it ends at the pipe's end of file, once the last process
holding the write end has exited. It carries no gateway marker, so nothing mistakes it for one.

New files are created 0600 in a directory the driver made 0700. Only the standard library is
imported here: the writer process runs this file without occ on its path.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

FILE_MODE: Final = 0o600
"""Mode of every log and lock file."""

CHUNK: Final = 64 * 1024
"""The most the writer reads from its pipe at once."""


@dataclass(frozen=True)
class Rotation:
    """When a log file is rotated and how many rotated files are kept beside it."""

    max_bytes: int = 10 * 1024 * 1024
    backups: int = 2

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.backups < 1:
            raise ValueError("a rotation keeps at least one byte and one rotated file")


def rotated(path: Path, number: int) -> Path:
    """The ``number``-th older file of ``path`` (``name.1`` is the newest rotated one)."""
    return path.with_name(f"{path.name}.{number}")


def files(path: Path, rotation: Rotation) -> list[Path]:
    """The existing files of the log at ``path``, oldest first (``path`` itself last)."""
    candidates = [rotated(path, number) for number in range(rotation.backups, 0, -1)]
    return [candidate for candidate in [*candidates, path] if candidate.is_file()]


def create(path: Path) -> None:
    """Create the log at ``path`` empty unless it exists, with its lock file (both 0600): the
    log is where readers look at once, and neither file appears later, at a writer's whim."""
    os.close(open_appending(path))
    os.close(_open_lock(path))


def append(path: Path, data: bytes, rotation: Rotation) -> None:
    """Append ``data`` (whole lines, as the writer passes them) to the log at ``path``,
    rotating first whenever the next lines would take the file past ``rotation.max_bytes``."""
    with _locked(path):
        descriptor = open_appending(path)
        try:
            size = os.fstat(descriptor).st_size
            batch = bytearray()
            for line in data.splitlines(keepends=True):
                if size + len(batch) and size + len(batch) + len(line) > rotation.max_bytes:
                    _write(descriptor, batch)
                    batch.clear()
                    os.close(descriptor)
                    descriptor = -1
                    shift(path, rotation.backups)
                    descriptor = open_appending(path)
                    size = 0
                batch += line
            _write(descriptor, batch)
        finally:
            if descriptor >= 0:
                os.close(descriptor)


def start_writer(path: Path, rotation: Rotation) -> int:
    """Start the writer process of the log at ``path`` (created now, empty if new); the write
    end of its pipe, which the caller hands to the gateway and then closes."""
    create(path)
    read_end, write_end = os.pipe()
    try:
        subprocess.Popen(  # noqa: S603 - our own argv, no shell
            [
                sys.executable,
                "-I",  # isolated: no user site, no environment variables, no current directory
                "-S",  # nor the site packages: the standard library is all it needs
                __file__,
                str(path),
                str(rotation.max_bytes),
                str(rotation.backups),
            ],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",  # not the revision's directory, which a retirement removes
            env={},
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return write_end


def copy(source: int, path: Path, rotation: Rotation) -> None:
    """Append what ``source`` yields to the log at ``path`` until its end, line by line: a
    partial line waits for its end (or is written alone once it is a whole file long)."""
    pending = b""
    while chunk := os.read(source, CHUNK):
        pending += chunk
        complete, newline, rest = pending.rpartition(b"\n")
        if newline:
            append(path, complete + newline, rotation)
            pending = rest
        elif len(pending) >= rotation.max_bytes:
            append(path, pending, rotation)
            pending = b""
    if pending:
        append(path, pending, rotation)


def shift(path: Path, backups: int) -> None:
    """``path`` to ``path.1``, ``path.1`` to ``path.2`` ...; the oldest past ``backups`` goes."""
    for number in range(backups, 0, -1):
        source = path if number == 1 else rotated(path, number - 1)
        with contextlib.suppress(FileNotFoundError):
            os.replace(source, rotated(path, number))


def open_appending(path: Path) -> int:
    """A descriptor appending to ``path`` (created 0600; an older file is narrowed to it)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(descriptor, FILE_MODE)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _write(descriptor: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the log at ``path``."""
    descriptor = _open_lock(path)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _open_lock(path: Path) -> int:
    """A descriptor of the lock file of the log at ``path`` (``.name.lock`` beside it)."""
    return os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, FILE_MODE)


def _main(argv: list[str]) -> int:
    """The writer: ``logfiles.py PATH MAX_BYTES BACKUPS``, copying stdin into the log; status 1
    when the log cannot be written (its revision directory was removed, say)."""
    path, max_bytes, backups = Path(argv[0]), int(argv[1]), int(argv[2])
    try:
        copy(sys.stdin.fileno(), path, Rotation(max_bytes=max_bytes, backups=backups))
    except OSError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
