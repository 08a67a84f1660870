"""The ``local`` driver's runtime logs: a revision's ``gateway.log``, read-only.

The last ``tail`` lines are read backwards in blocks, never the whole file, and from the
rotated files (``gateway.log.1`` and older, ``logfiles``) when the current one holds fewer.
A gateway writes no timestamp of its own to each line, so ``since`` keeps the lines from the
first JSON line whose ``time`` is at or after it (the stand-in gateway's events carry one; a
log without any answers every line). Following polls the file; when it is replaced (rotated)
or truncated, reading starts again at the new file's start.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from occ.drivers.compute import runtime_logs
from occ.drivers.compute.local import logfiles, store
from occ.settings.config import Settings

POLL_S: Final = 0.2
"""How often a follow looks for new lines."""
_BLOCK: Final = 64 * 1024


class LocalLogs:
    """Reads the gateway logs under the local driver's root."""

    def __init__(self, root: Path) -> None:
        self.layout = store.Layout(root)

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalLogs:
        return cls(Path(settings.local_root).resolve())

    def path(self, target: runtime_logs.LogTarget) -> Path:
        return self.layout.revision_dir(target.agent_id, target.revision_id) / store.LOG

    def read_logs(
        self, target: runtime_logs.LogTarget, query: runtime_logs.LogQuery
    ) -> runtime_logs.LogLines:
        path = self.path(target)
        try:
            follower = _Follower(path)
        except FileNotFoundError:
            raise runtime_logs.unavailable("the revision's gateway has no log") from None
        except OSError as exc:
            raise runtime_logs.unavailable(type(exc).__name__) from None
        stop = runtime_logs.Stop(query.follow_s if query.follow else 0.0, time.monotonic)
        try:
            current = follower.tail(query.tail)  # as the file is now
            if query.tail is None or len(current) < query.tail:
                current = _rotated_lines(path) + current
                current = current[max(len(current) - query.tail, 0) :] if query.tail else current
            first = _since(current, query.since)
        except OSError as exc:
            follower.close()
            raise runtime_logs.unavailable(type(exc).__name__) from None

        def lines() -> Iterator[str]:
            try:
                yield from first
                while query.follow and not stop.wait(POLL_S):
                    yield from follower.new_lines()
            finally:
                follower.close()

        return runtime_logs.LogLines(lines(), stop.close)


class _Follower:
    """One log path, read from a position; a replaced or truncated file is read anew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: BinaryIO = path.open("rb")

    def close(self) -> None:
        self.handle.close()

    def tail(self, count: int | None) -> list[str]:
        """The last ``count`` complete lines (all with ``None``); reading goes on after them."""
        handle = self.handle
        size = handle.seek(0, os.SEEK_END)
        if count is None:
            handle.seek(0)
            data = handle.read(size)
        else:
            data, position = b"", size
            while position > 0 and data.count(b"\n") <= count:
                step = min(_BLOCK, position)
                position -= step
                handle.seek(position)
                data = handle.read(step) + data
        complete, newline, partial = data.rpartition(b"\n")
        handle.seek(size - len(partial))
        if not newline:
            return []
        found = complete.split(b"\n")
        if count is not None:
            found = found[max(len(found) - count, 0) :] if count else []
        return [runtime_logs.cut(line.decode("utf-8", "replace")) for line in found]

    def new_lines(self) -> list[str]:
        """The complete lines written since the last read (a partial last line waits), then,
        when the file was replaced or truncated, the new file's."""
        lines = self._complete_lines()
        try:
            now = self.path.stat()
        except OSError:
            return lines  # rotated away and not recreated yet: the old file stays open
        mine = os.fstat(self.handle.fileno())
        replaced = (now.st_ino, now.st_dev) != (mine.st_ino, mine.st_dev)
        if replaced or now.st_size < self.handle.tell():
            try:
                fresh = self.path.open("rb")
            except OSError:
                return lines
            self.handle.close()
            self.handle = fresh
            lines += self._complete_lines()
        return lines

    def _complete_lines(self) -> list[str]:
        start = self.handle.tell()
        data = self.handle.read()
        complete, newline, _ = data.rpartition(b"\n")
        if not newline:
            self.handle.seek(start)
            return []
        self.handle.seek(start + len(complete) + 1)
        return [runtime_logs.cut(line.decode("utf-8", "replace")) for line in complete.split(b"\n")]


def _rotated_lines(path: Path) -> list[str]:
    """The lines of the rotated files of ``path`` (``gateway.log.1`` and older), oldest first."""
    files = []
    number = 1
    while (older := logfiles.rotated(path, number)).exists():
        files.append(older)
        number += 1
    lines: list[str] = []
    for older in reversed(files):
        try:
            data = older.read_bytes()
        except OSError:
            continue  # rotated away meanwhile
        lines += [
            runtime_logs.cut(line.decode("utf-8", "replace"))
            for line in data.split(b"\n")[: -1 if data.endswith(b"\n") else None]
        ]
    return lines


def _since(lines: list[str], since: dt.datetime | None) -> list[str]:
    """The lines from the first whose JSON ``time`` is at or after ``since``."""
    if since is None:
        return lines
    stamped = False
    for index, line in enumerate(lines):
        stamp = _time_of(line)
        if stamp is None:
            continue
        stamped = True
        if stamp >= since:
            return lines[index:]
    return [] if stamped else lines


def _time_of(line: str) -> dt.datetime | None:
    if not line.startswith("{"):
        return None
    try:
        document = json.loads(line)
        text = document.get("time") if isinstance(document, dict) else None
        if not isinstance(text, str):
            return None
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=dt.UTC)
