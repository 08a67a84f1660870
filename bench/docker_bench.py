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
stand-in image). Processes are ``bench/workers.py``'s: one control worker (threads, 2), one
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
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import docker

from bench import deploys, workers
from bench.support import answers, log, report
from occ.state import models
from occ.state.db import Database
from occ.tasks import nudge
from tests.integration.drivers.docker import objects as docker_objects
from tests.support import audits, brokers

BROKER_DB: Final = 11
IMAGE: Final = "occ-standin-gateway:dev"
SECRET_KEY: Final = "docker-bench-secret-key"
DEPLOY_TIMEOUT_S: Final = 600.0


# -- occ ---------------------------------------------------------------------------------------


def deploy_phase(
    database: Database,
    env: dict[str, str],
    admin: str,
    fleet: workers.Fleet,
    args: argparse.Namespace,
) -> tuple[str, deploys.Deploys]:
    """One Namespace of ``--agents`` docker Agents, each deployed once; the Namespace and what
    the deploys measured."""
    pairs, (namespace_id,) = deploys.prepare_world(
        database,
        env,
        admin,
        driver="docker",
        count=args.agents,
        per_namespace=args.agents,
        secret_key=SECRET_KEY,
    )
    log(args.verbose, f"{len(pairs)} Agents ready to deploy")
    with workers.celery_app(env) as celery:
        measured = deploys.deploy_all(
            database, nudge.Nudger(celery), admin, pairs, fleet, timeout=DEPLOY_TIMEOUT_S
        )
    if args.verbose:
        work_ids = deploys.work_ids(measured.revision_ids)
        durations = deploys.passes(fleet, measured.revision_ids)
        passes = audits.count(
            database,
            models.AuditEvent.action == "reconcile",
            models.AuditEvent.work_id.in_(work_ids),
        )
        log(
            args.verbose,
            f"deploy passes: {passes} for {len(work_ids)} deploys; completing passes took "
            f"p50 {statistics.median(durations):.0f} ms, max {max(durations):.0f} ms",
        )
    return namespace_id, measured


# -- the floor ---------------------------------------------------------------------------------


def floor(host: str, count: int, concurrency: int) -> deploys.Deploys:
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
            if bindings and answers(int(bindings[0]["HostPort"]), "/healthz", timeout=0.5):
                return (time.monotonic() - started) * 1000
            time.sleep(0.01)

    try:
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            latencies = list(pool.map(one, range(count)))
        return deploys.Deploys(count / (time.monotonic() - began), latencies, revision_ids=[])
    finally:
        for container in created:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
        network.remove()
        client.close()


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

    workers.exit_on_sigterm()
    broker = brokers.url(BROKER_DB)
    namespace_id = None
    started = time.monotonic()
    with workers.scratch("docker", broker) as (directory, urls):
        env = deploys.fleet_env(urls, broker, directory, SECRET_KEY)
        env.update(OCC_COMPUTE_DRIVER="docker", OCC_DOCKER_HOST=host)
        try:
            with workers.Fleet(env, directory).supervised() as fleet:
                database = Database(urls.app, pool_size=4, application_name="occ-docker-bench")
                try:
                    admin = deploys.bootstrap(database)
                    fleet.start_deploy_workers(args.concurrency)
                    namespace_id, occ = deploy_phase(database, env, admin, fleet, args)
                finally:
                    database.dispose()
                fleet.stop_all()
                sweep(host, namespace_id)
                bare = floor(host, args.agents, args.concurrency)
        finally:
            if namespace_id is not None:
                with contextlib.suppress(Exception):
                    sweep(host, namespace_id)

    figures = {
        **occ.figures("docker"),
        "floor_per_s": bare.per_s,
        "floor_p50_ms": bare.p50_ms,
        "floor_p99_ms": bare.p99_ms,
    }
    report(
        figures,
        [
            f"{deploys.versus('occ / floor', occ, bare)} "
            f"({args.agents} Agents, driver pool {args.concurrency}; "
            f"{time.monotonic() - started:.0f} s in all on {os.cpu_count()} CPUs)"
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
