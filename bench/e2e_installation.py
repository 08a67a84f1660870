"""The occ side of the end-to-end benchmark: the installation as the benchmark drives it
(admissions, live claims, Namespace counts), waiting for the fleet to be idle between phases,
and the processes whose CPU a phase spends."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

import redis
import sqlalchemy as sa

from bench import process_cpu
from bench.support import BenchError, log
from bench.workers import POLL_S, Fleet, wait_for
from occ.controller import namespaces
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import nudge

READY_TIMEOUT_S: Final = 60.0


def cpu_groups(fleet: Fleet, occ: Occ | None, broker: redis.Redis) -> dict[str, list[int]]:
    """The processes whose CPU a phase spends, by role."""
    groups: dict[str, list[int]] = {}
    for process in fleet.processes:
        role = process.name.rsplit("-", 1)[0]
        groups.setdefault(role, []).extend(process_cpu.family(process.popen.pid))
    if occ is not None:
        with occ.database.engine.connect() as connection:
            groups["postgres"] = [
                int(pid)
                for pid in connection.execute(
                    sa.text(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                        "AND application_name = 'occ-worker'"
                    )
                ).scalars()
            ]
    return groups | process_cpu.runner_groups(broker)


def work_id(namespace_id: str) -> str:
    return f"namespace:{namespace_id}:reconcile:ready"


@dataclass
class Occ:
    """This process's view of the installation: admissions, nudges and status counts."""

    database: Database
    admin_id: str
    nudger: nudge.Nudger
    sequence: int = 0

    def admit(self) -> str:
        self.sequence += 1
        view = namespaces.create_namespace(
            self.database, self.admin_id, namespaces.CreateNamespace(name=f"bench-{self.sequence}")
        )
        return view.id

    def live_claims(self) -> int:
        with self.database.engine.connect() as connection:
            return int(
                connection.execute(
                    sa.text("SELECT count(*) FROM occ.controller_work WHERE state = 'claimed'")
                ).scalar_one()
            )

    def counts(self) -> dict[str, int]:
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                sa.text("SELECT status, count(*) FROM occ.namespaces GROUP BY status")
            ).all()
        return {str(status): int(count) for status, count in rows}

    def wait_ready(self, total: int, *, timeout: float, fleet: Fleet) -> float:
        """Poll every 20 ms until ``total`` Namespaces are ready; the monotonic time then."""
        deadline = time.monotonic() + timeout
        while True:
            counts = self.counts()
            now = time.monotonic()
            if counts.get("ready", 0) >= total:
                return now
            if counts.get("failed", 0):
                raise BenchError(f"{counts['failed']} Namespaces failed: {counts}")
            if now > deadline:
                raise BenchError(f"timed out waiting for {total} ready Namespaces: {counts}")
            fleet.check()
            time.sleep(POLL_S)


def settle(occ: Occ, broker: redis.Redis) -> None:
    """Wait until no claim is live and no message waits in the broker: the fleet is idle."""

    def idle() -> bool:
        waiting = sum(int(broker.llen(key)) for key in broker.scan_iter(_type="LIST"))
        return waiting == 0 and occ.live_claims() == 0

    for _ in range(2):  # idle twice, a quarter second apart
        wait_for(idle, timeout=READY_TIMEOUT_S, message="the fleet to become idle")
        time.sleep(0.25)


def quiesce(occ: Occ, broker: redis.Redis, verbose: bool, before: str) -> None:
    """Drop nudges still queued for the control worker, then wait until the fleet is idle.

    Runs between phases once every Namespace is ready: a left-over ``occ.claim`` can only
    claim nothing, but it would sit in front of the next phase's nudges.
    """
    stale = 0
    for key in broker.scan_iter(match=f"{tasks_app.CONTROL_QUEUE}*", _type="LIST"):
        stale += int(broker.llen(key))
        broker.delete(key)
    settle(occ, broker)
    log(verbose, f"{stale} stale occ.claim messages were still queued before {before}: dropped")
