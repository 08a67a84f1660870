"""The fleet observer: each tick observes the running Agents that fell due, in bulk, and acts
only on a difference.

A tick moves the driver's cursor over the window it observes (``occ.state.observations``: one
short transaction under the cursor's row lock), reads the Agents that fell due in it (a
snapshot, no lock: observers read side by side), asks the Compute Driver about all of them in
one bulk, read-only call (``observe_revisions``), and judges each observation (``judge``,
pure):

* healthy, at the endpoint the Agent published, and recorded ready: nothing at all is written;
* healthy but recorded otherwise (a repair worked, or nothing was recorded yet): ``ready`` is
  recorded;
* starting (it runs and its health check has neither passed since it started nor failed: a
  restart on its way back): nothing is written, the next interval looks again;
* different (gone, not ready, drifted, another endpoint): a repair is admitted
  (``maintenance``), one at a time per revision and spaced while it stays degraded, at most
  ``maintenance.MAX_REPAIRS`` in a row: then nothing more until a person acts (a new deploy,
  or a repair asked for through the API);
* an Agent whose newer deploy is under way is left to that deploy.

An idle fleet costs one cursor row and one bulk read per tick, no work row, no audit row and no
message per Agent. Overload shows as lag (how far behind the cursor is), never as a backlog:
the cursor never lags more than one interval, so one interval of Agents is the most a tick ever
has to catch up on.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import environment, maintenance, specs
from occ.state import observations, runtime_observations
from occ.telemetry import metrics, observability

BATCH: Final = 1_000
"""Most Agents one tick observes; more due ones wait for the next tick (sent at once)."""

Status = runtime_observations.RuntimeStatus


class Verdict(enum.StrEnum):
    """What an observation of one Agent leads to."""

    UNCHANGED = "unchanged"
    RECOVERED = "recovered"
    REPAIR = "repair"
    SPACED = "spaced"
    """Different, but a repair was admitted too recently."""
    EXHAUSTED = "exhausted"
    """Different, but its repairs ran out: quiet until a person acts (a deploy, a repair)."""
    DEPLOYING = "deploying"
    STARTING = "starting"
    """Not healthy yet but on its way (``Observed.starting``): looked at next interval."""


def judge(due: observations.Due, seen: base.Observed, now: dt.datetime) -> Verdict:
    """The decision table of one observation (see the module)."""
    if due.deploying:
        return Verdict.DEPLOYING
    if seen.healthy and seen.endpoint == due.endpoint:
        return Verdict.UNCHANGED if due.observed == Status.READY else Verdict.RECOVERED
    if seen.starting and not seen.healthy:
        return Verdict.STARTING
    if due.repairs >= maintenance.MAX_REPAIRS:
        return Verdict.EXHAUSTED
    if due.repair_after is not None and due.repair_after > now:
        return Verdict.SPACED
    return Verdict.REPAIR


@dataclass
class Tick:
    """What one tick did."""

    observed: int = 0
    verdicts: dict[Verdict, int] = field(default_factory=dict)
    lag_s: float = 0.0
    caught_up: bool = True
    held: bool = False
    """Another observer held the cursor past ``observations.CURSOR_WAIT_MS``: this tick did
    nothing."""
    refused: int = 0
    """Agents the driver could not observe now (they wait for the next interval)."""

    @property
    def repairs(self) -> int:
        return self.verdicts.get(Verdict.REPAIR, 0)


def interval_ms(worker: environment.Worker) -> int | None:
    """The observation interval of this worker's driver (``None``: it observes nothing)."""
    interval_s = worker.driver.capabilities.maintenance_interval_s
    return max(int(interval_s * 1000), 1) if interval_s else None


def tick(worker: environment.Worker, *, limit: int = BATCH) -> Tick:
    """Observe what fell due since the cursor (at most ``limit`` Agents) and act on what
    changed."""
    interval = interval_ms(worker)
    if interval is None:
        return Tick()
    driver = worker.driver
    with worker.database.transaction() as session:
        window = observations.claim_window(session, driver.name, interval_ms=interval, limit=limit)
    if window is None:
        return Tick(held=True)
    with worker.database.snapshot() as session:
        batch = observations.due(session, driver.name, window)
    report = Tick(observed=len(batch), lag_s=window.lag_s, caught_up=window.caught_up)
    if not batch:
        return report
    try:
        seen = driver.observe_revisions([specs.revision(due.revision) for due in batch])
    except base.TransientDriverError as exc:
        # the driver cannot say now (its cache is not current): these wait for the next
        # interval rather than pass for unhealthy and be repaired all at once
        report.refused = len(batch)
        metrics.OBSERVATIONS.labels("refused").inc(len(batch))
        observability.log(
            "worker.observe-refused", level=logging.WARNING, code=exc.code, count=len(batch)
        )
        return report
    judged = [
        (due, seen[due.revision.id], judge(due, seen[due.revision.id], window.now)) for due in batch
    ]
    for _, _, verdict in judged:
        report.verdicts[verdict] = report.verdicts.get(verdict, 0) + 1
        metrics.OBSERVATIONS.labels(str(verdict)).inc()
    _act(worker, judged, interval_ms=interval, now=window.now)
    return report


def _act(
    worker: environment.Worker,
    judged: Sequence[tuple[observations.Due, base.Observed, Verdict]],
    *,
    interval_ms: int,
    now: dt.datetime,
) -> None:
    """Record what recovered and admit the repairs, in one transaction (none when nothing
    changed)."""
    changes = [item for item in judged if item[2] in (Verdict.RECOVERED, Verdict.REPAIR)]
    if not changes:
        return
    with worker.database.transaction() as session:
        for due, seen, verdict in changes:
            revision = due.revision
            if verdict == Verdict.RECOVERED:
                runtime_observations.record(
                    session, revision.agent_id, revision.id, Status.READY, _OBSERVED_READY
                )
                continue
            admitted = maintenance.admit_repair(
                session, due, seen.code or "", interval_ms=interval_ms, now=now
            )
            if admitted:
                observability.log(
                    "worker.repair-admitted",
                    level=logging.INFO,
                    code=seen.code,
                    namespaceId=revision.namespace_id,
                    agentId=revision.agent_id,
                    revisionId=revision.id,
                )


_OBSERVED_READY: Final = codes.Code.REVISION_ALREADY_ACTIVE
"""The reason recorded with a runtime the observer found ready again."""
