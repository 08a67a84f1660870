"""The effect journal's lines as intervals on the harness's clock.

A driver worker's wall clock may be shifted (a chaos variant sets one a minute off), so its
``startedAt``/``endedAt`` are not used as times: every effect is placed by its
``startedMonotonic``/``endedMonotonic`` readings, taken on the machine's one monotonic clock
(libfaketime leaves it alone), and moved onto the harness's true wall clock by ``JournalClock``.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JournalClock:
    """Places journal entries on the harness's wall clock by their monotonic readings."""

    wall_minus_monotonic: float
    """The harness's wall clock minus the machine's monotonic clock, read together."""

    @classmethod
    def now(cls) -> JournalClock:
        """Read in this (unshifted) process: both clocks are the machine's true ones."""
        return cls(time.time() - time.monotonic())

    def started(self, entry: Mapping[str, Any]) -> float:
        return float(entry["startedMonotonic"]) + self.wall_minus_monotonic

    def ended(self, entry: Mapping[str, Any]) -> float:
        return float(entry["endedMonotonic"]) + self.wall_minus_monotonic

    def offsets(self, entries: Iterable[Mapping[str, Any]]) -> dict[int, int]:
        """Effects by their writer's wall-clock offset (whole seconds, ``startedAt`` minus
        the true start)."""
        found = collections.Counter(
            round(float(e["startedAt"]) - self.started(e))
            for e in entries
            if e["phase"] == "started"
        )
        return dict(sorted(found.items()))


@dataclass(frozen=True)
class Interval:
    lane: str
    work_id: str
    token: str
    started: float
    ended: float | None  # None: never ended and never killed
    outcome: str
    op: str = ""
    pid: int = 0
    attempt: int = 0
    """The claim's attempt number as its worker knew it (0: not journalled)."""

    def describe(self) -> str:
        end = "open" if self.ended is None else f"{self.ended:.2f}"
        return (
            f"{self.work_id} {self.op} token {self.token[:8]} attempt {self.attempt}"
            f" pid {self.pid} [{self.started:.2f}, {end}] {self.outcome}"
        )


def intervals(
    entries: list[dict[str, Any]],
    lanes: Mapping[str, str],
    killed_at: Mapping[int, float],
    clock: JournalClock,
) -> list[Interval]:
    """One interval per journalled effect, with its lane, on the harness's clock."""
    ended = {(e["token"], e["op"], e["startedAt"]): e for e in entries if e["phase"] == "ended"}
    found = []
    for entry in entries:
        if entry["phase"] != "started":
            continue
        lane = entry.get("agentId") or lanes.get(entry["workId"]) or entry.get("namespaceId")
        end = ended.get((entry["token"], entry["op"], entry["startedAt"]))
        started = clock.started(entry)
        if end is not None:
            found.append(
                Interval(
                    str(lane), entry["workId"], entry["token"], started, clock.ended(end),
                    end["outcome"], entry["op"], entry["pid"], entry.get("attempt", 0),
                )
            )  # fmt: skip
        else:
            killed = killed_at.get(entry["pid"])
            stop = killed if killed is not None and killed >= started else None
            found.append(
                Interval(
                    str(lane), entry["workId"], entry["token"], started, stop,
                    "killed", entry["op"], entry["pid"], entry.get("attempt", 0),
                )
            )  # fmt: skip
    return found
