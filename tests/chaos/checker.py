"""What a chaos run must prove, read from the database (as its owner) and the effect journal.

* every admitted item is terminal: a publication (a ``reconcile`` audit with a success code,
  or the Agent-deletion finalizer's ``agents.lifecycle.delete``) or a final failure; a deploy
  or stop its Agent's deletion overtook counts apart (removed by the finalizer before it ran,
  or failed ``INVALID_AGENT_STATE`` because the Agent was already deleting);
* exactly one publication per successful item;
* no two effects of one lane overlap in time (a killed pool process's open effect ends when
  it was killed, a stopped process does nothing until it is continued; an aborted effect
  acted on nothing and is left out);
* no publication by a stale claim: no claim newer than the publisher (its attempt as its
  worker's ``worker.completed`` names it, read from the fleet's logs) had begun its effects
  (``publishers``);
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from occ.foundation import codes
from occ.state.db import Database
from tests.chaos import world as chaos_world
from tests.chaos.effects import Interval, JournalClock, intervals
from tests.chaos.publishers import stale_publication


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
    publishers_named: int = 0
    """Publications judged with their publisher's attempt (its ``worker.completed``), not by
    the journal's tokens alone."""
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
    published_by: Mapping[str, list[int]],
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
            publishers = published_by.get(item.work_id)
            report.publishers_named += bool(publishers)
            report.stale_publications += stale_publication(
                item.work_id,
                effects,
                float(publications[0]["at"]),
                killed_at,
                min(publishers) if publishers else None,
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
