"""Deploy benchmark of the ``docker`` Compute Driver through the worker fleet, beside the SDK floor.

Not a test: it asserts nothing, it measures. stdout gets exactly these lines::

    docker_deploys_per_s    Agents deployed per second: first admission -> last ``active``
    docker_deploy_p50_ms    one deploy: admission commit -> activation (its audit row)
    docker_deploy_p99_ms
    floor_per_s             the bare SDK: containers created, started and answering /healthz
                            per second, as many at once as the fleet runs deploys
    floor_p50_ms            one such container: create -> start -> /healthz 200
    floor_p99_ms

stderr gets a short summary (the ratios occ / floor) and, with ``-v``, progress lines.

Set-up: ``OCC_TEST_DATABASE_URL`` names a PostgreSQL server (a fresh database is created and
dropped, ``tests.support.databases``), ``OCC_TEST_REDIS_URL`` the Redis whose database 11 is
the broker, ``OCC_TEST_DOCKER_HOST`` the engine (``make services`` starts one and builds the
stand-in image). Processes are ``bench/e2e_bench.py``'s: one control worker (threads, 2), one
driver worker (prefork, ``--concurrency``, 4 by default: Docker calls mostly wait), and beat
claiming every 250 ms. One Namespace is made ready through the fleet, then ``--agents``
Agents (50) are created with their grants; the clock starts at the first deploy admission.
Each admission is followed by a nudge (what the API does); a deployment's latency runs from
``time.time()`` right after its admission commits to the ``occurred_at`` of its activation
audit row (the same machine's clock).

The floor runs in the same process right after, on the same engine and image: a thread pool
of the same size creates, starts and probes as many containers (published port on
127.0.0.1, no occ) on a network of its own, then removes them. Everything the benchmark made
on the engine is removed at the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as ``python bench/docker_bench.py``
    sys.path.insert(0, str(ROOT))

import docker  # noqa: E402
import redis  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from bench import e2e_bench  # noqa: E402
from occ import secret_store  # noqa: E402
from occ.config import Settings  # noqa: E402
from occ.controller import deployments, installation, namespaces  # noqa: E402
from occ.db import Database  # noqa: E402
from occ.state import models  # noqa: E402
from occ.tasks import app as tasks_app  # noqa: E402
from occ.tasks import nudge  # noqa: E402
from tests.integration.drivers.docker import objects as docker_objects  # noqa: E402
from tests.support import audits, brokers, databases, processes, worlds  # noqa: E402

BROKER_DB: Final = 11
IMAGE: Final = "occ-standin-gateway:dev"
SECRET_KEY: Final = "docker-bench-secret-key"


def log(verbose: bool, message: str) -> None:
    e2e_bench.log(verbose, message)


# -- occ ---------------------------------------------------------------------------------------


def prepare_world(
    database: Database, env: dict[str, str], admin: str, agents_count: int
) -> tuple[str, list[str]]:
    """A Namespace (made ready by the fleet) and ``agents_count`` docker Agents."""
    namespace_id = namespaces.create_namespace(database, actor_id=admin, name="bench").id
    processes.nudge(env)

    def ready() -> bool:
        with database.transaction() as session:
            row = session.get(models.Namespace, namespace_id)
            return row is not None and row.status == "ready"

    e2e_bench.wait_for(ready, timeout=60, message="the Namespace to become ready")
    resources = worlds.namespace_resources(
        database,
        admin=admin,
        namespace_id=namespace_id,
        store=secret_store.SecretStore(SECRET_KEY),
        secret_value="sk-bench",
        document={"model": "m"},
    )
    agent_ids = [
        worlds.bound_agent(
            database,
            admin=admin,
            namespace_id=namespace_id,
            resources=resources,
            compute_driver="docker",
            name=f"agent-{index}",
        ).id
        for index in range(agents_count)
    ]
    return namespace_id, agent_ids


def deploy_all(
    database: Database,
    nudger: nudge.Nudger,
    admin: str,
    namespace_id: str,
    agent_ids: list[str],
    fleet: e2e_bench.Fleet,
    verbose: bool,
) -> tuple[float, list[float]]:
    """Admit one deploy per Agent (a nudge after each); the throughput and latencies (ms)."""
    admitted: dict[str, float] = {}
    for agent_id in agent_ids:
        accepted = deployments.deploy_agent(
            database, actor_id=admin, namespace_id=namespace_id, agent_id=agent_id
        )
        admitted[accepted.deployment_id] = time.time()
        nudger.send_now()
    log(verbose, f"{len(admitted)} deploys admitted")

    def activations() -> dict[str, float]:
        with database.transaction() as session:
            rows = session.execute(
                sa.select(models.AuditEvent.resource_id, models.AuditEvent.occurred_at).where(
                    models.AuditEvent.action == "agents.lifecycle.activate"
                )
            ).all()
        return {row.resource_id: row.occurred_at.timestamp() for row in rows}

    def finished() -> dict[str, float] | None:
        fleet.check()
        found = activations()
        failed = _failed(database)
        if failed:
            raise e2e_bench.BenchError(f"deployments failed: {failed}")
        return found if set(admitted) <= set(found) else None

    done = e2e_bench.wait_for(finished, timeout=600, interval=0.1, message="every deploy active")
    assert done is not None  # wait_for returns only a true value
    if verbose:
        work_ids = {f"agent_revision:{rev}:reconcile" for rev in admitted}
        durations = e2e_bench.driver_durations(fleet, work_ids)
        passes = audits.count(
            database,
            models.AuditEvent.action == "reconcile",
            models.AuditEvent.work_id.in_(work_ids),
        )
        log(
            verbose,
            f"deploy passes: {passes} for {len(work_ids)} deploys; completing passes took "
            f"p50 {statistics.median(durations):.0f} ms, max {max(durations):.0f} ms",
        )
    latencies = [(done[rev] - at) * 1000 for rev, at in admitted.items()]
    elapsed = max(done[rev] for rev in admitted) - min(admitted.values())
    return len(admitted) / elapsed, latencies


def _failed(database: Database) -> list[str]:
    with database.transaction() as session:
        rows = session.execute(
            sa.select(models.ControllerWork.id, models.ControllerWork.reason_code).where(
                models.ControllerWork.state == "failed"
            )
        ).all()
    return [f"{row.id}: {row.reason_code}" for row in rows]


# -- the floor ---------------------------------------------------------------------------------


def floor(host: str, count: int, concurrency: int) -> tuple[float, list[float]]:
    """Bare SDK: create, start, probe ``count`` containers, ``concurrency`` at a time."""
    client = docker.DockerClient(base_url=host, timeout=60)
    network = client.networks.create(f"occ-bench-floor-{uuid.uuid4().hex[:8]}", driver="bridge")
    created: list[Any] = []

    def one(index: int) -> float:
        started = time.monotonic()
        container = client.containers.create(
            IMAGE,
            [
                "--port",
                "8080",
                "--host",
                "0.0.0.0",
                "--revision-id",
                f"rev_floor_{index}",
                "--agent-id",
                "agt_floor",
                "--generation",
                "1",
                "--config",
                "/etc/occ/configuration.json",
            ],
            network=network.name,
            ports={"8080/tcp": ("127.0.0.1", None)},
            read_only=True,
            user="10001:10001",
        )
        created.append(container)
        container.start()
        while True:
            container.reload()
            bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get("8080/tcp")
            if bindings and _answers(int(bindings[0]["HostPort"])):
                return (time.monotonic() - started) * 1000
            time.sleep(0.01)

    try:
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            latencies = list(pool.map(one, range(count)))
        return count / (time.monotonic() - began), latencies
    finally:
        for container in created:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
        network.remove()
        client.close()


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def sweep(host: str, namespace_id: str) -> None:
    client = docker.DockerClient(base_url=host, timeout=60)
    try:
        docker_objects.sweep(client, namespace_id)
    finally:
        client.close()


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50, help="Agents deployed (and floor runs)")
    parser.add_argument("--concurrency", type=int, default=4, help="driver worker pool size")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    host = os.environ.get("OCC_TEST_DOCKER_HOST")
    if not host:
        parser.error("OCC_TEST_DOCKER_HOST is not set (make services starts an engine)")

    e2e_bench.exit_on_sigterm()
    broker = brokers.url(BROKER_DB)
    broker_client = redis.Redis.from_url(broker)
    broker_client.flushdb()
    directory = Path(tempfile.mkdtemp(prefix="occ-docker-bench-"))
    urls = databases.urls_for(f"occ_docker_bench_{os.getpid()}")
    env = e2e_bench.fleet_env(urls, broker, directory / "local")
    env.update(
        OCC_COMPUTE_DRIVER="docker",
        OCC_DOCKER_HOST=host,
        OCC_SECRET_KEY=SECRET_KEY,
        OCC_API_KEY_PEPPER="bench-pepper",
    )
    fleet = e2e_bench.Fleet(env, directory)
    namespace_id = None
    started = time.monotonic()
    try:
        databases.create_test_database(urls.name)
        database = Database(urls.app, pool_size=4, application_name="occ-docker-bench")
        celery = tasks_app.create(Settings.from_env(env))
        try:
            boot = installation.bootstrap_installation(database, name="bench", admin_name="admin")
            admin = boot.admin_principal_id
            assert admin is not None
            fleet.start_deploy_workers(args.concurrency)
            namespace_id, agent_ids = prepare_world(database, env, admin, args.agents)
            log(args.verbose, f"{len(agent_ids)} Agents ready to deploy")
            per_s, latencies = deploy_all(
                database,
                nudge.Nudger(celery),
                admin,
                namespace_id,
                agent_ids,
                fleet,
                args.verbose,
            )
        finally:
            celery.close()
            database.dispose()
        fleet.stop_all()
        sweep(host, namespace_id)
        floor_per_s, floor_latencies = floor(host, args.agents, args.concurrency)
    except BaseException as exc:
        fleet.abandon(exc)
        raise
    finally:
        fleet.kill_all()
        if namespace_id is not None:
            with contextlib.suppress(Exception):
                sweep(host, namespace_id)
        with contextlib.suppress(Exception):
            databases.drop_database(urls)
        broker_client.flushdb()
        broker_client.close()
        shutil.rmtree(directory, ignore_errors=True)

    figures = {
        "docker_deploys_per_s": per_s,
        "docker_deploy_p50_ms": statistics.median(latencies),
        "docker_deploy_p99_ms": e2e_bench.percentile(latencies, 0.99),
        "floor_per_s": floor_per_s,
        "floor_p50_ms": statistics.median(floor_latencies),
        "floor_p99_ms": e2e_bench.percentile(floor_latencies, 0.99),
    }
    for name, value in figures.items():
        print(f"{name}={value:.1f}")
    print(
        f"occ / floor: throughput {figures['docker_deploys_per_s'] / figures['floor_per_s']:.2f}, "
        f"p50 {figures['docker_deploy_p50_ms'] / figures['floor_p50_ms']:.2f}x, "
        f"p99 {figures['docker_deploy_p99_ms'] / figures['floor_p99_ms']:.2f}x "
        f"({args.agents} Agents, driver pool {args.concurrency}; "
        f"{time.monotonic() - started:.0f} s in all on {os.cpu_count()} CPUs)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
