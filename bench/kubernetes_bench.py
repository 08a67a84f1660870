"""Deploy benchmark of the ``kubernetes`` Compute Driver through the worker fleet, beside ``local``.

Not a test: it asserts nothing, it measures. stdout gets exactly these lines::

    k8s_deploys_per_s          Agents deployed per second: first admission -> last ``active``
    k8s_deploy_p50_ms          one deploy: admission commit -> activation (its audit row)
    k8s_deploy_p99_ms
    k8s_api_calls_per_deploy   requests the fake API server received per deploy (its journal)
    k8s_repass_api_calls       requests of one no-op maintenance pass over an active revision
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

Processes are ``bench/e2e_bench.py``'s: one control worker (threads, 2), one driver worker
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

The no-op re-pass: with every revision active, ``occ.observe_runtimes`` is sent once; it
enqueues one maintenance pass, due now, per active revision; the requests the journal records
until all of them succeeded, divided by their number, is ``k8s_repass_api_calls``.

The ``local`` baseline runs right after, in the same process, against the same database and
broker, with a fleet of its own (``OCC_COMPUTE_DRIVER=local``): each revision is a stand-in
gateway process on this machine, stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as ``python bench/kubernetes_bench.py``
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from bench import e2e_bench  # noqa: E402
from occ import secret_store  # noqa: E402
from occ.config import Settings  # noqa: E402
from occ.controller import deployments, installation, namespaces  # noqa: E402
from occ.db import Database  # noqa: E402
from occ.drivers.compute.local import LocalComputeDriver  # noqa: E402
from occ.state import models  # noqa: E402
from occ.tasks import app as tasks_app  # noqa: E402
from occ.tasks import names, nudge  # noqa: E402
from tests.support import brokers, databases, processes, worlds  # noqa: E402
from tests.support.kube_api import FakeKubeAPI  # noqa: E402

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


def log(verbose: bool, message: str) -> None:
    e2e_bench.log(verbose, message)


@dataclass(frozen=True)
class Deploys:
    """What one driver's deploy phase measured."""

    per_s: float
    latencies_ms: list[float]
    revision_ids: list[str]


# -- occ ---------------------------------------------------------------------------------------


def prepare_world(
    database: Database, env: dict[str, str], admin: str, driver: str, count: int, per_namespace: int
) -> tuple[list[tuple[str, str]], list[str]]:
    """Namespaces of ``per_namespace`` Agents each, made ready by the fleet, and ``count``
    Agents of ``driver`` with their grants; the (Namespace, Agent) pairs and the Namespaces."""
    namespace_ids = [
        namespaces.create_namespace(database, actor_id=admin, name=f"{driver}-{index}").id
        for index in range(math.ceil(count / per_namespace))
    ]
    processes.nudge(env)

    def ready() -> bool:
        with database.transaction() as session:
            statuses = session.execute(
                sa.select(models.Namespace.status).where(models.Namespace.id.in_(namespace_ids))
            ).scalars()
            return all(status == "ready" for status in statuses)

    e2e_bench.wait_for(ready, timeout=120, message=f"the {driver} Namespaces to become ready")
    pairs: list[tuple[str, str]] = []
    for index in range(count):
        namespace_id = namespace_ids[index // per_namespace]
        if index % per_namespace == 0:
            resources = worlds.namespace_resources(
                database,
                admin=admin,
                namespace_id=namespace_id,
                store=secret_store.SecretStore(SECRET_KEY),
                secret_value="sk-bench",
                document={"model": "m"},
            )
        agent = worlds.bound_agent(
            database,
            admin=admin,
            namespace_id=namespace_id,
            resources=resources,
            compute_driver=driver,
            name=f"agent-{index}",
        )
        pairs.append((namespace_id, agent.id))
    return pairs, namespace_ids


def deploy_all(
    database: Database,
    nudger: nudge.Nudger,
    admin: str,
    pairs: list[tuple[str, str]],
    fleet: e2e_bench.Fleet,
) -> Deploys:
    """Admit one deploy per Agent (a nudge after each); wait until every one is active."""
    admitted: dict[str, float] = {}
    for namespace_id, agent_id in pairs:
        accepted = deployments.deploy_agent(
            database, actor_id=admin, namespace_id=namespace_id, agent_id=agent_id
        )
        admitted[accepted.deployment_id] = time.time()
        nudger.send_now()

    def activations() -> dict[str, float] | None:
        fleet.check()
        with database.transaction() as session:
            failed = session.execute(
                sa.select(models.ControllerWork.id, models.ControllerWork.reason_code).where(
                    models.ControllerWork.state == "failed"
                )
            ).all()
            if failed:
                raise e2e_bench.BenchError(f"work failed: {[tuple(row) for row in failed[:5]]}")
            rows = session.execute(
                sa.select(models.AuditEvent.resource_id, models.AuditEvent.occurred_at).where(
                    models.AuditEvent.action == "agents.lifecycle.activate",
                    models.AuditEvent.resource_id.in_(admitted),
                )
            ).all()
        found = {row.resource_id: row.occurred_at.timestamp() for row in rows}
        return found if len(found) == len(admitted) else None

    done = e2e_bench.wait_for(
        activations, timeout=DEPLOY_TIMEOUT_S, interval=0.1, message="every deploy active"
    )
    assert done is not None  # wait_for returns only a true value
    latencies = [(done[rev] - at) * 1000 for rev, at in admitted.items()]
    elapsed = max(done.values()) - min(admitted.values())
    return Deploys(len(admitted) / elapsed, latencies, list(admitted))


def passes(fleet: e2e_bench.Fleet, revision_ids: list[str]) -> list[float]:
    """Durations (ms) of the driver worker's passes over these revisions' deploy work."""
    return e2e_bench.driver_durations(
        fleet, {f"agent_revision:{revision}:reconcile" for revision in revision_ids}
    )


def busy_work(database: Database) -> int:
    """Work items claimed, or queued and due: what an idle fleet has none of."""
    with database.transaction() as session:
        return int(
            session.execute(
                sa.select(sa.func.count())
                .select_from(models.ControllerWork)
                .where(
                    (models.ControllerWork.state == "claimed")
                    | (
                        (models.ControllerWork.state == "queued")
                        & (models.ControllerWork.available_at <= sa.func.now())
                    )
                )
            ).scalar_one()
        )


def wait_idle(database: Database, fleet: e2e_bench.Fleet) -> None:
    def idle() -> bool:
        fleet.check()
        return busy_work(database) == 0

    for _ in range(2):  # idle twice, a quarter second apart
        e2e_bench.wait_for(idle, timeout=IDLE_TIMEOUT_S, interval=0.1, message="an idle fleet")
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
        raise e2e_bench.BenchError(f"maintenance passes failed: {failed[:5]}")
    return len(rows)


# -- phases ------------------------------------------------------------------------------------


def start_fleet(env: dict[str, str], directory: Path, concurrency: int) -> e2e_bench.Fleet:
    fleet = e2e_bench.Fleet(env, directory)
    fleet.start_deploy_workers(concurrency)
    return fleet


def deploy_phase(
    database: Database,
    env: dict[str, str],
    admin: str,
    driver: str,
    fleet: e2e_bench.Fleet,
    counts: tuple[int, int],
    verbose: bool,
    before_deploys: Callable[[], None] = lambda: None,
) -> Deploys:
    """Make the world for ``counts`` (Agents, per Namespace), then deploy every Agent once."""
    pairs, namespace_ids = prepare_world(database, env, admin, driver, *counts)
    log(verbose, f"{driver}: {len(pairs)} Agents in {len(namespace_ids)} Namespaces")
    wait_idle(database, fleet)
    celery = tasks_app.create(Settings.from_env(env))
    try:
        before_deploys()
        cpu_before = time.process_time()
        deploys = deploy_all(database, nudge.Nudger(celery), admin, pairs, fleet)
        cpu_ms = (time.process_time() - cpu_before) * 1000 / len(pairs)
    finally:
        celery.close()
    durations = passes(fleet, deploys.revision_ids)
    log(
        verbose,
        f"{driver}: {len(durations)} passes for {len(pairs)} deploys, p50 "
        f"{statistics.median(durations):.0f} ms, max {max(durations):.0f} ms; this process "
        f"(the fake API server, polling) {cpu_ms:.1f} CPU ms per deploy",
    )
    return deploys


def repass(
    database: Database,
    env: dict[str, str],
    kube: FakeKubeAPI,
    fleet: e2e_bench.Fleet,
    revision_ids: list[str],
) -> tuple[float, float]:
    """API calls and writes per no-op maintenance pass (one per active revision)."""
    kube.clear_journal()
    celery = tasks_app.create(Settings.from_env(env))
    try:
        celery.send_task(names.OBSERVE_RUNTIMES, queue=tasks_app.CONTROL_QUEUE)
    finally:
        celery.close()

    def all_observed() -> bool:
        fleet.check()
        return maintenance_done(database, revision_ids) >= len(revision_ids)

    e2e_bench.wait_for(
        all_observed,
        timeout=IDLE_TIMEOUT_S,
        interval=0.1,
        message="a maintenance pass of every revision",
    )
    wait_idle(database, fleet)
    journal = kube.journal
    writes = [request for request in journal if request.method != "GET"]
    return len(journal) / len(revision_ids), len(writes) / len(revision_ids)


def stop_local_gateways(root: Path) -> None:
    """The local driver's gateways run in sessions of their own: stop them, then kill."""
    driver = LocalComputeDriver(root)
    for pid in driver.gateway_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and driver.gateway_processes():
        time.sleep(0.1)
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

    e2e_bench.exit_on_sigterm()
    broker = brokers.url(BROKER_DB)
    broker_client = redis.Redis.from_url(broker)
    broker_client.flushdb()
    directory = Path(tempfile.mkdtemp(prefix="occ-kubernetes-bench-"))
    urls = databases.urls_for(f"occ_kubernetes_bench_{os.getpid()}")
    kube = FakeKubeAPI(validate=False).start()
    kube.auto_rollout = True
    common = e2e_bench.fleet_env(urls, broker, directory / "local")
    common.update(
        OCC_SECRET_KEY=SECRET_KEY,
        OCC_API_KEY_PEPPER="bench-pepper",
        OCC_MAINTENANCE_INTERVAL_MS=str(MAINTENANCE_INTERVAL_MS),
    )
    k8s_env = {
        **common,
        "OCC_COMPUTE_DRIVER": "kubernetes",
        "OCC_KUBERNETES_KUBECONFIG": str(kube.write_kubeconfig(directory / "kubeconfig")),
        "OCC_KUBERNETES_GATEWAY_IMAGE": GATEWAY_IMAGE,
    }
    local_env = {**common, "OCC_COMPUTE_DRIVER": "local"}
    fleet: e2e_bench.Fleet | None = None
    started = time.monotonic()
    try:
        databases.create_test_database(urls.name)
        database = Database(urls.app, pool_size=4, application_name="occ-kubernetes-bench")
        try:
            boot = installation.bootstrap_installation(database, name="bench", admin_name="admin")
            admin = boot.admin_principal_id
            assert admin is not None

            (directory / "k8s").mkdir()
            fleet = start_fleet(k8s_env, directory / "k8s", args.concurrency)
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
            repass_calls, repass_writes = repass(database, k8s_env, kube, fleet, k8s.revision_ids)
            log(args.verbose, f"kubernetes: {count} deploys, then {count} maintenance passes")
            fleet.stop_all()

            (directory / "local-fleet").mkdir()
            fleet = start_fleet(local_env, directory / "local-fleet", args.concurrency)
            local = deploy_phase(database, local_env, admin, "local", fleet, counts, args.verbose)
            fleet.stop_all()
        finally:
            database.dispose()
    except BaseException as exc:
        if fleet is not None:
            fleet.abandon(exc)
        raise
    finally:
        if fleet is not None:
            fleet.kill_all()
        stop_local_gateways(directory / "local")
        kube.stop()
        with contextlib.suppress(Exception):
            databases.drop_database(urls)
        broker_client.flushdb()
        broker_client.close()
        shutil.rmtree(directory, ignore_errors=True)

    figures = {
        "k8s_deploys_per_s": k8s.per_s,
        "k8s_deploy_p50_ms": statistics.median(k8s.latencies_ms),
        "k8s_deploy_p99_ms": e2e_bench.percentile(k8s.latencies_ms, 0.99),
        "k8s_api_calls_per_deploy": calls_per_deploy,
        "k8s_repass_api_calls": repass_calls,
        "k8s_repass_writes": repass_writes,
        "local_deploys_per_s": local.per_s,
        "local_deploy_p50_ms": statistics.median(local.latencies_ms),
        "local_deploy_p99_ms": e2e_bench.percentile(local.latencies_ms, 0.99),
    }
    for name, value in figures.items():
        print(f"{name}={value:.1f}")
    print(
        f"kubernetes / local: throughput {k8s.per_s / local.per_s:.2f}, "
        f"p50 {figures['k8s_deploy_p50_ms'] / figures['local_deploy_p50_ms']:.2f}x, "
        f"p99 {figures['k8s_deploy_p99_ms'] / figures['local_deploy_p99_ms']:.2f}x; "
        f"{calls_per_deploy:.1f} API calls per deploy, {repass_calls:.1f} per no-op re-pass "
        f"({repass_writes:.1f} writes) ({count} Agents per driver, driver pool "
        f"{args.concurrency}; {time.monotonic() - started:.0f} s in all on {os.cpu_count()} CPUs)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
