"""Reading a revision's runtime logs: the query, the reader contract and what it answers.

Read-only: a reader never changes the runtime. Each Compute Driver has one (``logs`` beside
its driver), built from settings alone, so a process that only reads logs (the API) never
builds the driver itself. A reader answers ``LogLines``: the lines, oldest first, without
their line ends, and a ``close`` that ends them from any thread (idempotent). Following ends
by itself once ``follow_s`` has passed.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final, Protocol

from occ.drivers.compute import base

UNSUPPORTED: Final = "LOGS_UNSUPPORTED"
"""This driver cannot read runtime logs."""
UNAVAILABLE: Final = "LOGS_UNAVAILABLE"
"""The revision's runtime has no logs to read (its process, container or Pod is gone)."""

MAX_LINE_BYTES: Final = 16 * 1024
"""A longer line is cut there (a runaway line must not hold a whole stream in memory)."""


@dataclass(frozen=True)
class LogTarget:
    """The revision whose runtime logs are read."""

    namespace_id: str
    agent_id: str
    revision_id: str
    harness_mode: str


@dataclass(frozen=True)
class LogQuery:
    """What to read: the last ``tail`` lines (``None``: all there are), only lines since
    ``since`` (``None``: from the start), then, when ``follow``, new lines for ``follow_s``."""

    tail: int | None = None
    since: dt.datetime | None = None
    follow: bool = False
    follow_s: float = 0.0

    def __post_init__(self) -> None:
        if self.tail is not None and self.tail < 0:
            raise ValueError("tail must not be negative")
        if self.since is not None and self.since.tzinfo is None:
            raise ValueError("since must carry its time zone")
        if self.follow_s < 0:
            raise ValueError("follow_s must not be negative")


@dataclass(frozen=True)
class LogLines:
    """Lines as a reader streams them, and how to end the stream early."""

    lines: Iterator[str]
    close: Callable[[], None] = field(default=lambda: None, compare=False)

    def __iter__(self) -> Iterator[str]:
        return self.lines


class LogReader(Protocol):
    """What every Compute Driver's ``logs`` module provides."""

    def read_logs(self, target: LogTarget, query: LogQuery) -> LogLines:
        """The runtime's lines for ``query``; ``PermanentDriverError(UNAVAILABLE)`` when it has
        none to read, ``TransientDriverError`` when the infrastructure did not answer."""


class Stop:
    """An end for a follow: ``close`` from any thread, or the deadline ``follow_s`` from now."""

    def __init__(self, follow_s: float, clock: Callable[[], float]) -> None:
        self._event = threading.Event()
        self._clock = clock
        self.deadline = clock() + follow_s

    def close(self) -> None:
        self._event.set()

    @property
    def remaining_s(self) -> float:
        return max(self.deadline - self._clock(), 0.0)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (never past the deadline); whether the follow is over."""
        if self._event.wait(min(seconds, self.remaining_s)):
            return True
        return self.remaining_s <= 0

    @property
    def over(self) -> bool:
        return self._event.is_set() or self.remaining_s <= 0


def cut(line: str) -> str:
    """``line`` without its line end, at most ``MAX_LINE_BYTES`` long."""
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE_BYTES else line[:MAX_LINE_BYTES]


def streamed(
    chunks: Iterable[bytes],
    close: Callable[[], None],
    query: LogQuery,
    *,
    unterminated_last_line: bool = True,
    release: Callable[[], None] | None = None,
) -> LogLines:
    """``LogLines`` over a byte stream ``close`` ends: its lines decoded and ``cut``, the last
    one without a line end too when ``unterminated_last_line``. A follow's timer closes the
    stream at the deadline; once the lines end the stream is closed, then ``release``d."""
    timer = threading.Timer(query.follow_s, close) if query.follow else None
    if timer is not None:
        timer.daemon = True
        timer.start()

    def lines() -> Iterator[str]:
        pending = b""
        try:
            for chunk in chunks:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    yield cut(line.decode("utf-8", "replace"))
                pending = pending[:MAX_LINE_BYTES]
            if pending and unterminated_last_line:
                yield cut(pending.decode("utf-8", "replace"))
        finally:
            if timer is not None:
                timer.cancel()
            close()
            if release is not None:
                release()

    return LogLines(lines(), close)


def unavailable(reason: str) -> base.PermanentDriverError:
    return base.PermanentDriverError(UNAVAILABLE, reason)


def unsupported(driver: str) -> base.PermanentDriverError:
    return base.PermanentDriverError(UNSUPPORTED, f"the {driver} driver cannot read runtime logs")
