"""One chaos run: servers, fleet, workload and nemesis together, then the checker's figures.

``run`` starts a private PostgreSQL (migrated database, workers as ``occ_app``), a private
Redis and the silent proxy, the supervised fleet with short leases, admits the seeded workload
while the nemesis injects its faults, waits until every item is terminal (or the deadline
passes), stops everything and checks. ``Figures.line`` is the one line a run ends with.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import errors
from occ.settings.config import Settings
from occ.state.db import Database
from tests.chaos import checker, effects, nemesis, proxy, publishers, world
from tests.chaos import cluster as chaos_cluster
from tests.support import databases, servers

LEASE_MS = 2_000
MAX_ATTEMPTS = 10
SECRET_KEY = "chaos-secret-key-" + "k" * 32
PEPPER = "chaos-pepper-" + "p" * 32


@dataclass(frozen=True)
class Figures:
    seed: int
    report: checker.Report
    faults: list[nemesis.Fault]
    fault_errors: list[str]
    unexpected_exits: list[str]
    duplicates_sent: int
    max_recovery_s: float
    runtime_s: float
    variant: str = ""
    """What this run changes in the fleet (a skewed clock, an older worker), or nothing."""

    def line(self) -> str:
        kinds = collections.Counter(f.kind for f in self.faults)
        by_kind = " ".join(f"{kind}={kinds[kind]}" for kind in nemesis.KINDS)
        r = self.report
        skewed = sum(count for offset, count in r.clock_offsets.items() if offset != 0)
        return (
            f"chaos: seed={self.seed}{f' variant={self.variant}' if self.variant else ''}"
            f" items={r.items} faults={len(self.faults)} ({by_kind})"
            f" lost={len(r.lost)} failed={len(r.failed)}"
            f" overtaken_by_delete={r.cancelled + r.superseded}"
            f" dup_publications={len(r.dup_publications)} lane_overlaps={len(r.lane_overlaps)}"
            f" stale_publications={len(r.stale_publications)}"
            f" (publishers_named={r.publishers_named}) stuck={len(r.lost)}"
            f" orphans={len(r.orphans)} activation_dups={len(r.activation_dups)}"
            f" extra_passes={r.extra_passes} worker_exits={len(self.unexpected_exits)}"
            f" max_recovery_s={self.max_recovery_s:.1f} runtime_s={self.runtime_s:.0f}"
            f"{f' skewed_effects={skewed}' if skewed else ''}"
        )


def _database(server_url: str) -> databases.DatabaseUrls:
    previous = os.environ.get("OCC_TEST_DATABASE_URL")
    os.environ["OCC_TEST_DATABASE_URL"] = server_url
    try:
        return databases.create_test_database("occ_chaos")
    finally:
        if previous is None:
            os.environ.pop("OCC_TEST_DATABASE_URL", None)
        else:
            os.environ["OCC_TEST_DATABASE_URL"] = previous


def _environment(urls: databases.DatabaseUrls, broker_url: str, local_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(
        {
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": urls.app,
            "OCC_BROKER_URL": broker_url,
            "OCC_LOCAL_ROOT": str(local_root),
            "OCC_WORKER_LEASE_DURATION_MS": str(LEASE_MS),
            "OCC_DISPATCH_LEASE_MS": str(LEASE_MS),
            "OCC_CLAIM_INTERVAL_MS": "300",
            "OCC_RECOVERY_INTERVAL_MS": "300",
            "OCC_UNREADY_RECHECK_MS": "200",
            "OCC_WORKER_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
            "OCC_WORKER_DATABASE_TIMEOUT_MS": str(LEASE_MS),
            "OCC_LOCAL_EFFECT_DELAY_MS": "150",
            "OCC_MAINTENANCE_INTERVAL_MS": "600000",
            "OCC_MAX_IN_FLIGHT": "16",
            "OCC_API_KEY_PEPPER": PEPPER,
            "OCC_SECRET_KEY": SECRET_KEY,
        }
    )
    return env


def run(
    directory: Path,
    *,
    seed: int,
    items: int,
    faults: int,
    duration_s: float,
    settle_s: float,
    worker_env: Mapping[str, Mapping[str, str]] | None = None,
    variant: str = "",
) -> Figures:
    """One run; ``worker_env`` adds to the environment of the named fleet processes (a shifted
    clock, an older release), ``variant`` names that change in the figures."""
    began = time.time()
    rng = random.Random(seed)
    print(f"chaos: seed={seed} items={items} faults={faults} duration_s={duration_s}", flush=True)
    postgres = servers.PostgresServer()
    redis_server = servers.RedisServer(directory / "redis")
    silent = None
    fleet = None
    try:
        postgres.start()
        redis_server.start()
        urls = _database(postgres.url)
        silent = proxy.SilentProxy(postgres.port)
        proxied = make_url(urls.app).set(port=silent.port).render_as_string(hide_password=False)
        local_root = directory / "local"
        env = _environment(urls, redis_server.url, local_root)
        app_db = Database(urls.app, pool_size=4)
        owner_db = Database(urls.owner, pool_size=2)
        workload = world.Workload.plan(rng, items=items, duration_s=duration_s)
        the_world = world.World.create(app_db, workload, SECRET_KEY)
        fleet = chaos_cluster.Cluster(
            directory,
            env,
            proxied,
            redis_server,
            postgres,
            worker_env={name: dict(extra) for name, extra in (worker_env or {}).items()},
        )
        fleet.start()
        admission = threading.Lock()
        injector = nemesis.Nemesis(
            fleet, silent, app_db, Settings.from_env(env), rng,
            nemesis.Nemesis.schedule(rng, faults, duration_s), LEASE_MS / 1000, admission,
        )  # fmt: skip
        started = time.time()
        thread = threading.Thread(target=injector.run, args=(started,), daemon=True)
        thread.start()
        for step in workload.steps:
            delay = started + step.at_s - time.time()
            if delay > 0:
                time.sleep(delay)
            _admit(the_world, step, admission)
        thread.join()
        deadline = time.time() + settle_s
        while time.time() < deadline:
            if len(checker.terminal(owner_db, the_world.admitted)) == len(the_world.admitted):
                break
            time.sleep(0.5)
        driver = LocalComputeDriver(local_root)
        gateways_left = driver.gateway_processes()
        lanes = {
            f"agent_revision:{revision}": lane.agent_id
            for lane in the_world.agents.values()
            for revision in lane.revisions
        }
        lanes = {
            entry["workId"]: lanes[entry["workId"].rsplit(":", 2)[0]]
            for entry in driver.effects()
            if entry["workId"].startswith("agent_revision:")
            and entry["workId"].rsplit(":", 2)[0] in lanes
        } | {item.work_id: item.lane for item in the_world.admitted}
        report = checker.check(
            owner_db,
            the_world.admitted,
            driver.effects(),
            lanes,
            fleet.killed_at,
            effects.JournalClock.now(),
            max_attempts=MAX_ATTEMPTS,
            gateways_left=gateways_left,
            frozen=injector.frozen,
            published_by=publishers.publishing_attempts(fleet.logs().values()),
            fault_windows=[
                (f.started_at, f.ended_at + 2 * LEASE_MS / 1000 + 1.0) for f in injector.done
            ],
        )
        recovery = _max_recovery(injector.done, the_world.admitted, report)
        fleet.stop()
        unexpected = list(fleet.unexpected_exits)
        fleet = None
        app_db.dispose()
        owner_db.dispose()
        return Figures(
            seed, report, injector.done, injector.errors, unexpected,
            injector.duplicates_sent, recovery, time.time() - began, variant,
        )  # fmt: skip
    finally:
        if fleet is not None:
            fleet.stop()
        for pid in LocalComputeDriver(directory / "local").gateway_processes():
            _kill(pid)
        if silent is not None:
            silent.close()
        redis_server.close()
        postgres.close()
        shutil.rmtree(directory / "redis", ignore_errors=True)


def _admit(the_world: world.World, step: world.Step, admission: threading.Lock) -> None:
    """Admit ``step``; a database that failed before the commit is retried (nothing landed)."""
    deadline = time.monotonic() + 60
    while True:
        with admission:
            try:
                the_world.admit(step)
                return
            except errors.DependencyUnavailable:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.2)


def _max_recovery(
    faults: list[nemesis.Fault], admitted: list[world.Admitted], report: checker.Report
) -> float:
    """Per fault: how long after it ended the last item admitted before that took to finish."""
    worst = 0.0
    for fault in faults:
        pending = [
            report.completed_at[item.work_id] - fault.ended_at
            for item in admitted
            if item.admitted_at <= fault.ended_at
            and report.completed_at.get(item.work_id, 0.0) > fault.ended_at
        ]
        worst = max([worst, *pending])
    return worst


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)
