"""The fleet benchmark's repair phase: a gateway Deployment deleted behind occ's back, and the
time until the observing process has repaired it and recorded its Agent ready again."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any, Final

import sqlalchemy as sa

from bench import fleet_counts, fleet_observers, fleet_world, workers
from bench.support import BenchError, log
from occ.drivers.compute.kubernetes import manifests
from occ.state import models
from occ.state.db import Database
from tests.support.kube_api import FakeKubeAPI

REPAIR_INTERVAL_MS: Final = 10_000
REPAIR_TIMEOUT_S: Final = 60.0


def repair(
    owner: Database,
    url: str,
    kubeconfig: str,
    fake: FakeKubeAPI,
    fleet: list[fleet_world.Member],
    verbose: bool,
) -> dict[str, float]:
    """A gateway Deployment deleted behind occ's back: the time until its Agent is recorded
    ready again, the repair run by the observing process itself, at a 10 s interval."""
    member = fleet[len(fleet) // 2]
    fake.simulation.auto_rollout = True
    fleet_counts.set_cursor(owner, 0)
    run = fleet_observers.Run(url, kubeconfig, REPAIR_INTERVAL_MS, REPAIR_TIMEOUT_S, repair=True)
    context = multiprocessing.get_context("spawn")
    results, ready, go = context.Queue(), context.Queue(), context.Event()
    process = context.Process(
        target=fleet_observers.observe, args=(run, results, ready, go), daemon=True
    )
    process.start()
    ready.get(timeout=120)
    go.set()
    fake.remove("deployments", member.kubernetes_namespace, manifests.deployment_name(member.spec))
    killed = time.monotonic()

    def ready_again() -> bool:
        with owner.transaction() as session:
            row = session.execute(
                sa.select(models.AgentRuntime.status, models.AgentRuntime.repairs).where(
                    models.AgentRuntime.agent_id == member.spec.agent_id
                )
            ).one()
        return row.status == "ready" and repaired(owner, member)

    try:
        workers.wait_for(ready_again, timeout=REPAIR_TIMEOUT_S, interval=0.1, message="a repair")
    except BenchError as exc:
        raise BenchError(f"{exc}; its work: {work_of(owner, member)}") from None
    latency = time.monotonic() - killed
    log(verbose, f"repaired: {work_of(owner, member)}")
    log(verbose, f"repair timeline (s after the deletion): {timeline(owner, member, killed)}")
    process.terminate()
    process.join(timeout=10)
    log(verbose, f"repair in {latency:.1f} s at a {REPAIR_INTERVAL_MS / 1000:.0f} s interval")
    return {
        "repair_latency_s": latency,
        "repair_latency_intervals": latency * 1000 / REPAIR_INTERVAL_MS,
    }


def work_of(owner: Database, member: fleet_world.Member) -> list[tuple[str, str, str | None]]:
    """(kind, state, reason code) of the member's work items, for a failure's message."""
    work = models.ControllerWork
    with owner.transaction() as session:
        rows = session.execute(
            sa.select(work.kind, work.state, work.reason_code, work.last_progress_code).where(
                work.revision_id == member.spec.revision_id
            )
        ).all()
    return [(row.kind, row.state, row.reason_code or row.last_progress_code) for row in rows]


def timeline(owner: Database, member: fleet_world.Member, killed: float) -> list[str]:
    """When the member's repairs were admitted, last progressed and completed, in seconds
    after ``killed`` (a ``time.monotonic()``), for ``-v``."""
    work, runtime = models.ControllerWork, models.AgentRuntime
    offset = time.time() - time.monotonic()
    with owner.transaction() as session:
        rows = session.execute(
            sa.select(
                work.created_at, work.last_progress_at, work.completed_at, work.last_progress_code
            ).where(
                work.revision_id == member.spec.revision_id,
                work.kind == "revision_maintenance",
            )
        ).all()
        observed = session.execute(
            sa.select(runtime.observed_at).where(runtime.agent_id == member.spec.agent_id)
        ).scalar_one()

    def since(moment: Any) -> str:
        return "-" if moment is None else f"{moment.timestamp() - offset - killed:.1f}"

    return [
        f"admitted {since(row.created_at)} progressed {since(row.last_progress_at)} "
        f"({row.last_progress_code}) completed {since(row.completed_at)}"
        for row in rows
    ] + [f"observed ready {since(observed)}"]


def repaired(owner: Database, member: fleet_world.Member) -> bool:
    """A repair of the member's revision succeeded."""
    work = models.ControllerWork
    return bool(
        fleet_counts.work_rows(
            owner,
            work.revision_id == member.spec.revision_id,
            work.state == "succeeded",
            work.kind == "revision_maintenance",
        )
    )
