"""The effect journal: one ``started`` and one ``ended`` line per driver effect.

``effects.jsonl`` is the record fault tests read to prove that no item ran twice at once:
each line carries the operation, the work id, the claim token and attempt number that made the
effect, the worker's pid and the ids it touched. The ``ended`` line adds ``endedAt`` and the
``outcome`` (``done``, or the class of the exception that ended it, ``Aborted`` included).
An effect that a killed worker never finished has no ``ended`` line.

Each time is written twice: ``startedAt``/``endedAt`` from the worker's wall clock (epoch
seconds, for people), and ``startedMonotonic``/``endedMonotonic`` from the machine's monotonic
clock. The local driver's writers share one machine, whose monotonic clock (Linux
``CLOCK_MONOTONIC``) is one clock for all its processes and moves with no wall-clock setting or
step: the monotonic readings are what orders the effects of different workers, even when one
worker's wall clock is wrong.

Lines of concurrent workers never interleave: each is appended whole under the log's lock, and
the file is rotated by size (``logfiles``), so ``entries`` reads the rotated files too, oldest
first. Only ids and timings go in: never a credential or a configuration value.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.local import logfiles, store


class Journal:
    """Appends to and reads ``effects.jsonl`` in its root, rotated as ``rotation`` says."""

    def __init__(self, path: Path, rotation: logfiles.Rotation | None = None) -> None:
        self.path = path
        self.rotation = rotation or logfiles.Rotation()

    def record(self, entry: Mapping[str, Any]) -> None:
        """Append one line (whole, under the lock: lines never interleave)."""
        store.make_directories(self.path.parent)
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        logfiles.append(self.path, line, self.rotation)

    def entries(self) -> list[dict[str, Any]]:
        """Every line still kept (the rotated files' and the current one's), oldest first."""
        found: list[dict[str, Any]] = []
        for path in logfiles.files(self.path, self.rotation):
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue  # rotated away meanwhile
            found.extend(json.loads(line) for line in text.splitlines() if line.strip())
        return found

    def effect(
        self,
        operation: base.Operation,
        op: str,
        fields: Mapping[str, Any],
        *,
        delay_s: float = 0.0,
    ) -> Effect:
        """A context that journals one effect (see ``Effect``)."""
        return Effect(self, operation, op, dict(fields), delay_s=delay_s)


class Effect:
    """Times one effect, honours the abort event, and journals it with its claim token.

    Entering checks the abort event, writes ``started`` and waits ``delay_s`` (the simulated
    duration, abortable); leaving writes ``ended``. An abort during that wait ends the
    effect at once, journalled ``ended`` with outcome ``Aborted``.
    """

    def __init__(
        self,
        journal: Journal,
        operation: base.Operation,
        op: str,
        fields: dict[str, Any],
        *,
        delay_s: float = 0.0,
    ) -> None:
        self.journal, self.operation, self.op, self.fields = journal, operation, op, fields
        self.delay_s = delay_s
        self.started = 0.0
        self.started_monotonic = 0.0

    def __enter__(self) -> None:
        self.operation.check()
        self.started = time.time()
        self.started_monotonic = time.monotonic()
        self.journal.record(self._entry("started"))
        if self.delay_s:
            try:
                self.operation.wait(self.delay_s)
            except BaseException as exc:
                self._ended(type(exc))
                raise

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._ended(kind)

    def _ended(self, kind: type[BaseException] | None) -> None:
        outcome = "done" if kind is None else kind.__name__
        ended = {"endedAt": time.time(), "endedMonotonic": time.monotonic()}
        self.journal.record(self._entry("ended", **ended, outcome=outcome))

    def _entry(self, phase: str, **more: Any) -> dict[str, Any]:
        return {
            "phase": phase,
            "op": self.op,
            "workId": self.operation.work_id,
            "token": self.operation.claim_token,
            "attempt": self.operation.attempt,
            "pid": os.getpid(),
            "startedAt": self.started,
            "startedMonotonic": self.started_monotonic,
            **self.fields,
            **more,
        }
