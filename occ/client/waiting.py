"""``--wait``: poll an asynchronous operation until it settles, show progress, say how it ended.

``wait`` calls an observation function until it reports an end or the timeout passes; a look the
API refused for now (429, 503) or that found it unreachable is tried again, after the
``Retry-After`` asked (within the timeout), and shows as the progress code. Progress
goes to stderr: one line rewritten with ``\\r`` on a terminal, plain lines (one per change)
otherwise. Exit statuses: 0 the operation reached its goal, 1 it ended otherwise (with its reason
code), 3 the timeout passed first, 130 Ctrl-C stopped the wait (not the operation; 2 is click's
usage error and every ``occ: error`` line).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TextIO

from occ.client import http

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_ERROR: Final = 2
EXIT_TIMEOUT: Final = 3
EXIT_INTERRUPTED: Final = 130

DEFAULT_TIMEOUT_S: Final = 300.0
POLL_INTERVAL_S: Final = 0.5


@dataclass(frozen=True)
class Observation:
    """One look at an operation: its state, progress code, and whether (and how) it ended.

    ``ended`` with ``failed`` False reached the goal; ``code`` and ``message`` say why a failed
    one ended; ``data`` is what to print at the end.
    """

    state: str
    progress: str | None = None
    ended: bool = False
    failed: bool = False
    code: str | None = None
    message: str | None = None
    data: Any = None


@dataclass(frozen=True)
class Outcome:
    """How a wait ended: the exit status and the last observation."""

    exit_status: int
    last: Observation
    elapsed_s: float


class Progress:
    """Progress lines on ``stream``: rewritten in place on a terminal, else one per change."""

    def __init__(self, stream: TextIO, *, terminal: bool, label: str) -> None:
        self._stream = stream
        self._terminal = terminal
        self._label = label
        self._last_plain: tuple[str, str | None] | None = None
        self._width = 0

    def show(self, observation: Observation, elapsed_s: float) -> None:
        line = describe(self._label, observation, elapsed_s)
        if self._terminal:
            self._stream.write("\r" + line.ljust(self._width))
            self._width = max(self._width, len(line))
        elif self._last_plain != (observation.state, observation.progress):
            self._stream.write(line + "\n")
            self._last_plain = (observation.state, observation.progress)
        self._stream.flush()

    def close(self) -> None:
        if self._terminal and self._width:
            self._stream.write("\n")
            self._stream.flush()


def describe(label: str, observation: Observation, elapsed_s: float) -> str:
    """``label: state [progress] (12.3 s)``."""
    progress = f" {observation.progress}" if observation.progress else ""
    return f"{label}: {observation.state}{progress} ({elapsed_s:.1f} s)"


def wait(
    observe: Callable[[], Observation],
    *,
    timeout_s: float,
    progress: Progress,
    interval_s: float = POLL_INTERVAL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Observe until the operation ends, ``timeout_s`` passed or Ctrl-C (exit status in the
    outcome); an ``http.ApiError`` that is not ``transient`` ends the wait."""
    started = clock()
    deadline = started + timeout_s
    observation = Observation("unknown")
    try:
        while True:
            pause = interval_s
            try:
                observation = observe()
            except http.ApiError as error:
                if not error.transient:
                    raise
                observation = Observation(observation.state, progress=error.code)
                pause = interval_s if error.retry_after_s is None else error.retry_after_s
            now = clock()
            progress.show(observation, now - started)
            if observation.ended:
                status = EXIT_FAILED if observation.failed else EXIT_OK
                return Outcome(status, observation, now - started)
            if now >= deadline:
                return Outcome(EXIT_TIMEOUT, observation, now - started)
            sleep(max(0.0, min(pause, deadline - now)))
    except KeyboardInterrupt:
        return Outcome(EXIT_INTERRUPTED, observation, clock() - started)
    finally:
        progress.close()
