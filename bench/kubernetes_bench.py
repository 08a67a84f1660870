"""Deploy benchmark of the ``kubernetes`` Compute Driver through the worker fleet, beside ``local``.

Not a test: it asserts nothing, it measures. stdout gets exactly these lines::

    k8s_deploys_per_s          Agents deployed per second: first admission -> last ``active``
    k8s_deploy_p50_ms          one deploy: admission commit -> activation (its audit row)
    k8s_deploy_p99_ms
    k8s_api_calls_per_deploy   requests the fake API server received per deploy (its journal)
    k8s_repass_api_calls       requests of one repair pass over a healthy active revision
    k8s_repass_writes          of which writes (anything but GET; 0 when nothing changed)
    local_deploys_per_s        the same fleet, the same deploys, on the ``local`` driver
    local_deploy_p50_ms
    local_deploy_p99_ms

stderr gets a short summary (kubernetes / local) and, with ``-v``, progress lines.

Set-up: ``OCC_TEST_DATABASE_URL`` names a PostgreSQL server (a fresh database is created and
dropped, ``tests.support.databases``), ``OCC_TEST_REDIS_URL`` the Redis whose database 10 is
the broker. The cluster is the fake Kubernetes API server of the tests
(``tests.support.kube_api``), started in this process on 127.0.0.1 with immediate rollouts
(``auto_rollout``: a Deployment is available as soon as it is written) and without schema
validation (the tests validate; here it would only add the fake's own CPU). The workers reach
it over HTTP through a kubeconfig file, as they would reach a cluster.

Processes are ``bench/workers.py``'s: one control worker (threads, 2), one driver worker
(prefork, ``--concurrency``, 4 by default: API calls mostly wait) and beat claiming every
250 ms, all with a maintenance interval of an hour so that no maintenance pass runs while
deploys are measured. Per driver: Namespaces of ``--per-namespace`` Agents (10) are made
ready through the fleet, ``--agents`` Agents (200; 20 with ``--quick``) are created with their
grants, the journal is cleared and one deploy per Agent is admitted, each followed by a nudge
(what the API does). Small Namespaces keep the fake cheap: its EndpointSlice controller
copies every Pod of a namespace on each write, which with 200 Agents in one namespace would
make the fake, not occ, the bottleneck. ``-v`` reports this process's CPU per deploy. A deploy's
latency runs from ``time.time()`` right after its admission commits to the ``occurred_at`` of
its activation audit row. The API calls are counted once the fleet is idle again.

The no-op re-pass: with every revision active, one repair (``revision_maintenance``, what the
fleet observer admits when an observation differs) is admitted per active revision and the
workers nudged; the requests the journal records until all of them succeeded, divided by
their number, is ``k8s_repass_api_calls`` (an unchanged runtime's observation costs none: see
``bench/fleet.py``).

The ``local`` baseline runs right after, in the same process, against the same database and
broker, with a fleet of its own (``OCC_COMPUTE_DRIVER=local``): each revision is a stand-in
gateway process on this machine, stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from bench import deploys, fleet_counts, workers
from bench.support import BenchError, log, report
from occ.drivers.compute.local import LocalComputeDriver
from occ.state import models, values, work_keys, work_queue
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import names, nudge
from tests.support import brokers
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import poll

BROKER_DB: Final = 10
SECRET_KEY: Final = "kubernetes-bench-secret-key"
GATEWAY_IMAGE: Final = "registry.example/occ-gateway:bench"
MAINTENANCE_INTERVAL_MS: Final = 3_600_000
"""Longer than any run: the deploy phase sees no maintenance pass."""
QUICK_AGENTS: Final = 20
FULL_AGENTS: Final = 200
IDLE_TIMEOUT_S: Final = 120.0
DEPLOY_TIMEOUT_S: Final = 900.0
PER_NAMESPACE: Final = 10


# -- occ ---------------------------------------------------------------------------------------


def busy_work(database: Database) -> int:
    """Work items claimed, or queued and due: what an idle fleet has none of."""
    work = models.ControllerWork
    return fleet_counts.work_rows(
        database,
        (work.state == "claimed")
        | ((work.state == "queued") & (work.available_at <= sa.func.now())),
    )


def wait_idle(database: Database, fleet: workers.Fleet) -> None:
    def idle() -> bool:
        fleet.check()
        return busy_work(database) == 0

    for _ in range(2):  # idle twice, a quarter second apart
        workers.wait_for(idle, timeout=IDLE_TIMEOUT_S, interval=0.1, message="an idle fleet")
        time.sleep(0.25)


def maintenance_done(database: Database, revision_ids: list[str]) -> int:
    """Maintenance passes of ``revision_ids`` that succeeded (a failed one is an error)."""
    with database.transaction() as session:
        rows = session.execute(
            sa.select(models.ControllerWork.state, models.ControllerWork.reason_code).where(
                models.ControllerWork.kind == "revision_maintenance",
                models.ControllerWork.revision_id.in_(revision_ids),
                models.ControllerWork.state.in_(("succeeded", "failed")),
            )
        ).all()
    failed = [row.reason_code for row in rows if row.state == "failed"]
    if failed:
        raise BenchError(f"maintenance passes failed: {failed[:5]}")
    return len(rows)


# -- phases ------------------------------------------------------------------------------------


@contextlib.contextmanager
def phase_fleet(env: dict[str, str], directory: Path, concurrency: int) -> Iterator[workers.Fleet]:
    """A phase's deploy fleet, in a directory of its own, killed at the end."""
    directory.mkdir()
    with workers.Fleet(env, directory).supervised() as fleet:
        fleet.start_deploy_workers(concurrency)
        yield fleet


def deploy_phase(
    database: Database,
    env: dict[str, str],
    admin: str,
    driver: str,
    fleet: workers.Fleet,
    counts: tuple[int, int],
    verbose: bool,
    before_deploys: Callable[[], None] = lambda: None,
) -> deploys.Deploys:
    """Make the world for ``counts`` (Agents, per Namespace), then deploy every Agent once."""
    count, per_namespace = counts
    pairs, namespace_ids = deploys.prepare_world(
        database,
        env,
        admin,
        driver=driver,
        count=count,
        per_namespace=per_namespace,
        secret_key=SECRET_KEY,
    )
    log(verbose, f"{driver}: {len(pairs)} Agents in {len(namespace_ids)} Namespaces")
    wait_idle(database, fleet)
    with workers.celery_app(env) as celery:
        before_deploys()
        cpu_before = time.process_time()
        measured = deploys.deploy_all(
            database, nudge.Nudger(celery), admin, pairs, fleet, timeout=DEPLOY_TIMEOUT_S
        )
        cpu_ms = (time.process_time() - cpu_before) * 1000 / len(pairs)
    durations = deploys.passes(fleet, measured.revision_ids)
    log(
        verbose,
        f"{driver}: {len(durations)} passes for {len(pairs)} deploys, p50 "
        f"{statistics.median(durations):.0f} ms, max {max(durations):.0f} ms; this process "
        f"(the fake API server, polling) {cpu_ms:.1f} CPU ms per deploy",
    )
    return measured


def repass(
    database: Database,
    env: dict[str, str],
    kube: FakeKubeAPI,
    fleet: workers.Fleet,
    revision_ids: list[str],
) -> tuple[float, float]:
    """API calls and writes per repair pass over a healthy revision (one per active
    revision, admitted as the fleet observer admits one)."""
    kube.clear_journal()
    enqueue_repairs(database, revision_ids)
    with workers.celery_app(env) as celery:
        celery.send_task(names.CLAIM, queue=tasks_app.CONTROL_QUEUE)

    def all_observed() -> bool:
        fleet.check()
        return maintenance_done(database, revision_ids) >= len(revision_ids)

    workers.wait_for(
        all_observed,
        timeout=IDLE_TIMEOUT_S,
        interval=0.1,
        message="a maintenance pass of every revision",
    )
    wait_idle(database, fleet)
    journal = kube.journal
    writes = [request for request in journal if request.method != "GET"]
    return len(journal) / len(revision_ids), len(writes) / len(revision_ids)


def enqueue_repairs(database: Database, revision_ids: list[str]) -> None:
    """A repair of each revision, due now (``revision_maintenance``, as the fleet observer
    admits one when an observation differs)."""
    revision = models.AgentRevision
    with database.transaction() as session:
        rows = session.execute(
            sa.select(
                revision.id, revision.namespace_id, revision.agent_id, revision.actor_id
            ).where(revision.id.in_(revision_ids))
        ).all()
        now = int(time.time())
        for row in rows:
            owner = values.WorkOwner(
                namespace_id=row.namespace_id,
                actor_id=row.actor_id,
                agent_id=row.agent_id,
                revision_id=row.id,
            )
            work_queue.enqueue(session, work_keys.revision_maintenance(row.id, now), owner)


def stop_local_gateways(root: Path) -> None:
    """The local driver's gateways run in sessions of their own: stop them, then kill."""
    driver = LocalComputeDriver(root)
    for pid in driver.gateway_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    poll(lambda: not driver.gateway_processes(), timeout=10, interval=0.1)
    for pid in driver.gateway_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=None, help="Agents deployed per driver")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_AGENTS} Agents")
    parser.add_argument(
        "--per-namespace", type=int, default=PER_NAMESPACE, help="Agents per Namespace"
    )
    parser.add_argument("--concurrency", type=int, default=4, help="driver worker pool size")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    count = args.agents or (QUICK_AGENTS if args.quick else FULL_AGENTS)
    counts = (count, max(args.per_namespace, 1))

    workers.exit_on_sigterm()
    broker = brokers.url(BROKER_DB)
    started = time.monotonic()
    with workers.scratch("kubernetes", broker) as (directory, urls):
        kube = FakeKubeAPI(validate=False).start()
        kube.simulation.auto_rollout = True
        common = deploys.fleet_env(urls, broker, directory, SECRET_KEY)
        common.update(OCC_MAINTENANCE_INTERVAL_MS=str(MAINTENANCE_INTERVAL_MS))
        k8s_env = {
            **common,
            "OCC_COMPUTE_DRIVER": "kubernetes",
            "OCC_KUBERNETES_KUBECONFIG": str(kube.write_kubeconfig(directory / "kubeconfig")),
            "OCC_KUBERNETES_GATEWAY_IMAGE": GATEWAY_IMAGE,
        }
        local_env = {**common, "OCC_COMPUTE_DRIVER": "local"}
        database = Database(urls.app, pool_size=4, application_name="occ-kubernetes-bench")
        try:
            admin = deploys.bootstrap(database)
            with phase_fleet(k8s_env, directory / "k8s", args.concurrency) as fleet:
                k8s = deploy_phase(
                    database,
                    k8s_env,
                    admin,
                    "kubernetes",
                    fleet,
                    counts,
                    args.verbose,
                    kube.clear_journal,
                )
                wait_idle(database, fleet)
                calls_per_deploy = len(kube.journal) / count
                repass_calls, repass_writes = repass(
                    database, k8s_env, kube, fleet, k8s.revision_ids
                )
                log(args.verbose, f"kubernetes: {count} deploys, then {count} maintenance passes")
                fleet.stop_all()
            with phase_fleet(local_env, directory / "local-fleet", args.concurrency) as fleet:
                local = deploy_phase(
                    database, local_env, admin, "local", fleet, counts, args.verbose
                )
                fleet.stop_all()
        finally:
            database.dispose()
            stop_local_gateways(directory / "local")
            kube.stop()

    figures = {
        **k8s.figures("k8s"),
        "k8s_api_calls_per_deploy": calls_per_deploy,
        "k8s_repass_api_calls": repass_calls,
        "k8s_repass_writes": repass_writes,
        **local.figures("local"),
    }
    report(
        figures,
        [
            f"{deploys.versus('kubernetes / local', k8s, local)}; "
            f"{calls_per_deploy:.1f} API calls per deploy, {repass_calls:.1f} per no-op re-pass "
            f"({repass_writes:.1f} writes) ({count} Agents per driver, driver pool "
            f"{args.concurrency}; {time.monotonic() - started:.0f} s in all on "
            f"{os.cpu_count()} CPUs)"
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
