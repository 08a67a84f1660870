"""What a chaos run must prove, read from the database (as its owner) and the effect journal.

* every admitted item is terminal: a publication (a ``reconcile`` audit with a success code,
  or the Agent-deletion finalizer's ``agents.lifecycle.delete``) or a final failure; a deploy
  or stop its Agent's deletion overtook counts apart (removed by the finalizer before it ran,
  or failed ``INVALID_AGENT_STATE`` because the Agent was already deleting);
* exactly one publication per successful item;
* no two effects of one lane overlap in time (a killed pool process's open effect ends when
  it was killed, a stopped process does nothing until it is continued; an aborted effect
  acted on nothing and is left out);
* no publication by a stale token: the effect that preceded a publication belongs to the
  newest claim that ran the item;
* attempt counts within the budget, and more than one attempt only for an item that lived
  through a fault;
* one activation audit per activated revision;
* no gateway process left for an Agent that was deleted.

The journal's times are compared with each other, with the database's audit times and with the
harness's kill, stop and fault times, so they must all read one clock. A driver worker's wall
clock may be shifted (a chaos variant sets one a minute off), so its ``startedAt``/``endedAt``
are not used as times: every effect is placed by its ``startedMonotonic``/``endedMonotonic``
readings, taken on the machine's one monotonic clock (libfaketime leaves it alone), and moved
onto the harness's true wall clock by ``JournalClock``. The difference between an entry's own
wall time and that placement is the writer's clock offset, counted in ``Report.clock_offsets``
(a variant's test asserts its shifted worker journalled effects with the offset it was given).
"""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from occ.foundation import codes
from occ.state.db import Database
from tests.chaos import world as chaos_world


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

    def describe(self) -> str:
        end = "open" if self.ended is None else f"{self.ended:.2f}"
        return (
            f"{self.work_id} {self.op} token {self.token[:8]} pid {self.pid}"
            f" [{self.started:.2f}, {end}] {self.outcome}"
        )


@dataclass
class Report:
    items: int = 0
    lost: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dup_publications: list[str] = field(default_factory=list)
    lane_overlaps: list[str] = field(default_factory=list)
    stale_publications: list[str] = field(default_factory=list)
    over_budget: list[str] = field(default_factory=list)
    unexplained_retries: list[str] = field(default_factory=list)
    activation_dups: list[str] = field(default_factory=list)
    orphans: list[int] = field(default_factory=list)
    extra_passes: int = 0
    cancelled: int = 0
    superseded: int = 0
    completed_at: dict[str, float] = field(default_factory=dict)
    clock_offsets: dict[int, int] = field(default_factory=dict)
    """Journalled effects by their writer's wall-clock offset in seconds (``{0: n}`` unskewed)."""

    def violations(self) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {
            "lost": self.lost,
            "failed": self.failed,
            "dup_publications": self.dup_publications,
            "lane_overlaps": self.lane_overlaps,
            "stale_publications": self.stale_publications,
            "over_budget": self.over_budget,
            "unexplained_retries": self.unexplained_retries,
            "activation_dups": self.activation_dups,
            "orphans": self.orphans,
        }
        return {name: values for name, values in found.items() if values}


def _audits(owner: Database) -> dict[str, list[Mapping[str, Any]]]:
    with owner.transaction() as session:
        rows = session.execute(
            sa.text(
                "SELECT work_id, action, outcome, details, resource_id,"
                " extract(epoch FROM occurred_at) AS at"
                " FROM occ.audit_events WHERE work_id IS NOT NULL OR action = :activate"
                " ORDER BY sequence"
            ),
            {"activate": "agents.lifecycle.activate"},
        ).mappings()
        by_work: dict[str, list[Mapping[str, Any]]] = collections.defaultdict(list)
        for row in rows:
            by_work[row["work_id"] or ""].append(dict(row))
    return by_work


def _is_publication(audit: Mapping[str, Any]) -> bool:
    if audit["action"] == "agents.lifecycle.delete":
        return True
    if audit["action"] != "reconcile":
        return False
    code = (audit["details"] or {}).get("reasonCode")
    entry = codes.lookup(code) if isinstance(code, str) else None
    return entry is not None and entry.outcome is codes.Outcome.SUCCESS


def _is_final_failure(audit: Mapping[str, Any]) -> bool:
    return audit["action"] == "reconcile" and bool((audit["details"] or {}).get("final"))


def terminal(owner: Database, admitted: Iterable[chaos_world.Admitted]) -> set[str]:
    """Work ids of ``admitted`` that reached a terminal state."""
    audits = _audits(owner)
    items = list(admitted)
    deleted = {
        item.lane
        for item in items
        if item.kind == "delete" and any(_is_publication(a) for a in audits.get(item.work_id, []))
    }
    done = set()
    for item in items:
        if any(_is_publication(a) or _is_final_failure(a) for a in audits.get(item.work_id, [])):
            done.add(item.work_id)
        elif item.lane in deleted and _row(owner, item.work_id) is None:
            done.add(item.work_id)  # removed by its Agent's deletion
    return done


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
                    end["outcome"], entry["op"], entry["pid"],
                )
            )  # fmt: skip
        else:
            killed = killed_at.get(entry["pid"])
            stop = killed if killed is not None and killed >= started else None
            found.append(
                Interval(
                    str(lane), entry["workId"], entry["token"], started, stop,
                    "killed", entry["op"], entry["pid"],
                )
            )  # fmt: skip
    return found


def _segments(
    interval: Interval, frozen: list[tuple[tuple[int, ...], float, float]]
) -> list[tuple[float, float]]:
    """When the effect could act: its interval minus the spans its process was stopped."""
    pieces = [(interval.started, float("inf") if interval.ended is None else interval.ended)]
    for pids, stopped, resumed in frozen:
        if interval.pid not in pids:
            continue
        cut = []
        for start, end in pieces:
            if resumed <= start or end <= stopped:
                cut.append((start, end))
                continue
            if start < stopped:
                cut.append((start, stopped))
            if resumed < end:
                cut.append((resumed, end))
        pieces = cut
    return pieces


def _overlaps(
    found: list[Interval], frozen: list[tuple[tuple[int, ...], float, float]]
) -> list[str]:
    acting = [i for i in found if i.outcome in ("done", "killed")]
    by_lane: dict[str, list[Interval]] = collections.defaultdict(list)
    for interval in acting:
        by_lane[interval.lane].append(interval)
    overlaps = []
    for lane, lane_intervals in by_lane.items():
        lane_intervals.sort(key=lambda i: i.started)
        for first, second in itertools.combinations(lane_intervals, 2):
            if first.token == second.token:
                continue
            if any(
                a_start < b_end and b_start < a_end
                for a_start, a_end in _segments(first, frozen)
                for b_start, b_end in _segments(second, frozen)
            ):
                overlaps.append(f"{lane}: {first.describe()} and {second.describe()}")
    return overlaps


def check(
    owner: Database,
    admitted: list[chaos_world.Admitted],
    entries: list[dict[str, Any]],
    lanes: Mapping[str, str],
    killed_at: Mapping[int, float],
    clock: JournalClock,
    *,
    max_attempts: int,
    gateways_left: list[int],
    fault_windows: list[tuple[float, float]],
    frozen: list[tuple[tuple[int, ...], float, float]],
) -> Report:
    audits = _audits(owner)
    report = Report(items=len(admitted), clock_offsets=clock.offsets(entries))
    found = intervals(entries, lanes, killed_at, clock)
    by_work: dict[str, list[Interval]] = collections.defaultdict(list)
    for interval in found:
        by_work[interval.work_id].append(interval)
    deletions = {
        item.lane: item
        for item in admitted
        if item.kind == "delete" and any(_is_publication(a) for a in audits.get(item.work_id, []))
    }
    for item in admitted:
        item_audits = audits.get(item.work_id, [])
        publications = [a for a in item_audits if _is_publication(a)]
        failures = [a for a in item_audits if _is_final_failure(a)]
        deleted = deletions.get(item.lane)
        if not publications and not failures:
            row = _row(owner, item.work_id)
            if deleted is not None and row is None:
                report.cancelled += 1  # the Agent's deletion removed it before it ran
            else:
                report.lost.append(f"{item.work_id} {row}")
            continue
        if failures and not publications:
            code = failures[0]["details"].get("reasonCode")
            if code == "INVALID_AGENT_STATE" and deleted is not None:
                report.superseded += 1  # ran after its Agent's deletion was admitted
            else:
                report.failed.append(f"{item.work_id}: {code}")
        if len(publications) + len(failures) > 1:
            report.dup_publications.append(item.work_id)
        last = (publications or failures)[-1]
        report.completed_at[item.work_id] = float(last["at"])
        attempts = (last["details"] or {}).get("attemptCount")
        if isinstance(attempts, int) and attempts > max_attempts:
            report.over_budget.append(f"{item.work_id}: {attempts}")
        # without a fault in its lifetime an item never spends a second attempt
        lifetime = (item.admitted_at, report.completed_at[item.work_id])
        touched = any(start <= lifetime[1] and lifetime[0] <= end for start, end in fault_windows)
        if isinstance(attempts, int) and attempts > 1 and not touched:
            report.unexplained_retries.append(
                f"{item.work_id}: {attempts} attempts in [{lifetime[0]:.2f}, {lifetime[1]:.2f}]"
            )
        effects = sorted(by_work.get(item.work_id, []), key=lambda i: i.started)
        tokens = list(dict.fromkeys(i.token for i in effects))
        report.extra_passes += max(0, len(tokens) - 1)
        if publications and effects:
            report.stale_publications += stale_publication(
                item.work_id, effects, float(publications[0]["at"]), killed_at
            )
    report.lane_overlaps = _overlaps(found, frozen)
    activations = collections.Counter(
        a["resource_id"] for a in audits.get("", []) if a["action"] == "agents.lifecycle.activate"
    )
    report.activation_dups = [rev for rev, count in activations.items() if count != 1]
    report.orphans = list(gateways_left)
    return report


def _row(owner: Database, work_id: str) -> str | None:
    """How a non-terminal item looks (for the failure message); None when it has no row."""
    with owner.transaction() as session:
        row = (
            session.execute(
                sa.text(
                    "SELECT state, attempt_count, last_progress_code,"
                    " started_at IS NOT NULL AS ran,"
                    " round(extract(epoch FROM available_at - clock_timestamp())) AS due_in_s"
                    " FROM occ.controller_work WHERE id = :id"
                ),
                {"id": work_id},
            )
            .mappings()
            .first()
        )
    return str(dict(row)) if row else None


KILL_SLACK_S = 1.0
"""How long after its process's kill a statement it sent may still commit."""


def stale_publication(
    work_id: str,
    effects: list[Interval],
    published_at: float,
    killed_at: Mapping[int, float],
) -> list[str]:
    """The publisher is the token of the last effect done before the publication by a process
    still alive then (a process killed before it published nothing); a newer claim's effect
    starting between that token's first effect and the publication makes it stale.

    A publishing claim that journalled no effect is not seen: when the claims before it ran in
    processes killed since, nothing is said; otherwise the last of them is taken for the
    publisher (docs/reliability.md, the open finding on the publisher)."""
    done = [
        i
        for i in effects
        if i.outcome == "done"
        and (i.ended or 0) <= published_at + 0.5
        and killed_at.get(i.pid, float("inf")) > published_at - KILL_SLACK_S
    ]
    if not done:
        return []
    publisher = done[-1].token
    first = min(i.started for i in effects if i.token == publisher)
    newer = [i for i in effects if i.token != publisher and first < i.started < published_at]
    if not newer:
        return []
    history = "; ".join(i.describe() for i in effects)
    return [
        f"{work_id}: published at {published_at:.2f} by a token older than"
        f" {newer[0].token[:8]} (effects: {history})"
    ]
