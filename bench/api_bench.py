"""Benchmark of the HTTP API under gunicorn: prints ``name=value`` figures.

Not a test: it asserts nothing, it measures. It creates a fresh database on the server named by
``OCC_TEST_DATABASE_URL`` (``tests.support.databases``: created, migrated, role ``occ_app``),
bootstraps the Installation and an administrator key, and starts
``gunicorn "occ.web.app:create_app()"`` (2 gthread workers) on a free 127.0.0.1 port with
``OCC_DATABASE_URL`` (role ``occ_app``), a per-run API-key pepper and secret key, and
``OCC_BROKER_URL`` on the local Redis (``OCC_BENCH_REDIS_URL``, else an empty database nobody
is connected to on ``OCC_TEST_REDIS_URL``'s server; flushed at the end) so every admission's
nudge is really published. Through the
API it then creates a Namespace (made ``ready`` with one UPDATE as the database owner, standing
in for a worker), a Configuration, a Secret and the Agents, and binds each Agent's service
principal to a Role with ``configuration:read`` + ``secret:operate`` (what a deploy checks).

Each phase runs ``--threads`` client threads (default 4), each with its own keep-alive
``http.client`` connection, after ``--warmup`` seconds that are not counted. The phases are
``/healthz``, deploys spread over ``--agents`` Agents (default 4), deploys to one Agent, the
spread deploys again, ``/healthz`` again (each half ``--duration`` / 2 seconds: each pair that
forms a ratio brackets the other, so load drifting during the run moves both sides alike) and
``GET`` of the Namespace (``--duration``). stdout gets exactly::

    deploy_per_s                POST .../agents/{id}/deploy admissions/s (202s), threads
    deploy_p50_ms               spread over the Agents; its latency percentiles, client side
    deploy_p99_ms
    deploy_one_agent_per_s      the same, every thread deploying the same Agent
    deploy_one_agent_p50_ms
    deploy_one_agent_p99_ms
    get_namespace_per_s         GET /v1/namespaces/{ns} requests/s (200s)
    get_namespace_p50_ms
    get_namespace_p99_ms
    healthz_per_s               GET /healthz requests/s: no database, no authentication
    healthz_p50_ms
    healthz_p99_ms
    deploy_per_healthz          deploy_per_s / healthz_per_s (target >= 0.11)
    one_agent_per_spread        deploy_one_agent_per_s / deploy_per_s (target >= 0.8)

A deploy is a full admission: authentication, four authorization decisions (one policy load
per principal), the Configuration read, then under the Agent row lock the revision number, a
new immutable revision, a work row and an audit event in one transaction, then the nudge.
Deploys to one Agent queue on its row lock (the contended case). stderr gets the settings,
the ratios against their targets, error counts and the nudges left in ``occ.control``. Compare
ratios, not absolute figures, across runs and machines.

    OCC_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/api_bench.py [--duration 10] [--agents 4]
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
import sqlalchemy as sa

from bench import api_server
from bench.api_load import Client, Figures, Sample, measure
from bench.support import figure, say
from occ.controller import installation
from occ.state import api_keys
from occ.state.db import Database
from tests.support import brokers, databases, servers

WORKERS = 2
WORKER_THREADS = 4
GTHREAD = (
    "--worker-class",
    "gthread",
    "--threads",
    str(WORKER_THREADS),
    "--keep-alive",
    "30",
    "--timeout",
    "60",
)
"""The server's gthread workers: a few threads each, kept-alive connections."""
REDIS_CANDIDATE_DBS = tuple(range(12, 0, -1))
"""Redis databases the benchmark may take for its broker when ``OCC_BENCH_REDIS_URL`` is not
set: the first that is empty and has no client connected (other suites pick fixed numbers)."""

DEPLOY_PER_HEALTHZ_TARGET = 0.11
"""deploy admissions/s over the Agents as a share of /healthz requests/s (0.056 before the
admission's hot path was reworked)."""
ONE_AGENT_TARGET = 0.8
"""deploys/s to one Agent as a share of deploys/s spread over the Agents (0.55 to 0.6 before)."""


def redis_url() -> str:
    """The broker of this run: ``OCC_BENCH_REDIS_URL``, else a free database on the server of
    ``OCC_TEST_REDIS_URL`` (default the local Redis). The benchmark flushes it at start and end.
    """
    chosen = os.environ.get("OCC_BENCH_REDIS_URL")
    if chosen:
        return chosen
    number = brokers.quiet_database(REDIS_CANDIDATE_DBS)
    if number is not None:
        return brokers.url(number)
    raise RuntimeError("no free Redis database; set OCC_BENCH_REDIS_URL")


# -- the world --------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    namespace_id: str
    agent_ids: list[str]


def bootstrap(urls: databases.DatabaseUrls, pepper: str) -> str:
    database = Database(urls.app, pool_size=1)
    try:
        boot = installation.bootstrap_installation(
            database, name="api-bench", admin_name="bench-admin"
        )
        assert boot.admin_principal_id is not None
        with database.transaction() as session:
            minted = api_keys.mint(session, principal_id=boot.admin_principal_id, pepper=pepper)
        return minted.plaintext
    finally:
        database.dispose()


def build_world(client: Client, urls: databases.DatabaseUrls, agents: int) -> World:
    namespace = client.json("POST", "/v1/namespaces", {"name": "bench"}, expect=201)
    namespace_id = namespace["id"]
    owner = sa.create_engine(urls.owner, poolclass=sa.pool.NullPool)
    try:
        with owner.begin() as connection:  # a worker would do this; there is none here
            connection.execute(
                sa.text("UPDATE occ.namespaces SET status = 'ready' WHERE id = :id"),
                {"id": namespace_id},
            )
    finally:
        owner.dispose()
    base = f"/v1/namespaces/{namespace_id}"
    configuration = client.json(
        "POST",
        f"{base}/configurations",
        {
            "name": "bench-config",
            "document": {"model": "bench", "tools": ["shell", "web"]},
        },
        expect=201,
    )
    secret = client.json(
        "POST",
        f"{base}/secrets",
        {"name": "bench-token", "value": secrets.token_hex(16)},
        expect=201,
    )
    role = client.json(
        "POST",
        "/v1/roles",
        {
            "name": "bench deployer",
            "permissions": ["configuration:read", "secret:operate"],
        },
        expect=201,
    )
    agent_ids = []
    for n in range(agents):
        agent = client.json(
            "POST",
            f"{base}/agents",
            {
                "name": f"bench-agent-{n}",
                "configurationId": configuration["id"],
                "harness": {"id": "openclaw", "version": "1.0.0"},
                "executionMode": "embedded",
                "harnessAuth": {"kind": "secret", "secretId": secret["id"]},
            },
            expect=201,
        )
        client.json(
            "POST",
            "/v1/access-bindings",
            {
                "roleId": role["id"],
                "principalId": agent["servicePrincipalId"],
                "namespaceId": namespace_id,
            },
            expect=201,
        )
        agent_ids.append(agent["id"])
    first = client.json("POST", f"{base}/agents/{agent_ids[0]}/deploy", expect=202)
    assert first["deploymentId"], first
    return World(namespace_id, agent_ids)


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=10.0, help="measured seconds per phase (default 10)"
    )
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="unmeasured seconds before each phase (default 2)"
    )
    parser.add_argument("--threads", type=int, default=4, help="client threads (default 4)")
    parser.add_argument(
        "--agents",
        type=int,
        default=4,
        help="Agents the spread deploy threads share (default 4); one Agent is measured too",
    )
    args = parser.parse_args(argv)
    if not os.environ.get("OCC_TEST_DATABASE_URL"):
        say(
            "set OCC_TEST_DATABASE_URL to a PostgreSQL server the benchmark may create a "
            "database on"
        )
        return 2

    broker_url = redis_url()
    broker = redis.Redis.from_url(broker_url, socket_timeout=5)
    broker.flushdb()
    urls = databases.create_test_database(f"occ_api_bench_{os.getpid()}")
    pepper = secrets.token_hex(32)
    port = servers.free_port()
    server = None
    with tempfile.NamedTemporaryFile(prefix="occ-api-bench-", suffix=".log") as server_log:
        try:
            key = bootstrap(urls, pepper)
            server = api_server.start(
                urls, port, pepper, broker_url, server_log, workers=WORKERS, options=GTHREAD
            )
            api_server.wait_ready(server, port, server_log.name)
            setup = Client(port, key)
            world = build_world(setup, urls, max(1, args.agents))
            setup.close()
            say(
                f"gunicorn: {WORKERS} gthread workers x {WORKER_THREADS} threads on "
                f"127.0.0.1:{port}; {args.threads} client threads, {args.warmup:g} s warm-up + "
                f"{args.duration:g} s per figure; deploys over {len(world.agent_ids)} Agent(s) "
                f"and over one; broker database {urlsplit(broker_url).path}"
            )

            def run(
                request: Callable[[Client, int], tuple[str, str]], expect: int, share: float
            ) -> Sample:
                return measure(
                    port,
                    key,
                    threads=args.threads,
                    warmup_s=args.warmup,
                    duration_s=args.duration * share,
                    request=request,
                    expect=expect,
                )

            base = f"/v1/namespaces/{world.namespace_id}"

            def deploy_spread(_client: Client, index: int) -> tuple[str, str]:
                agent_id = world.agent_ids[index % len(world.agent_ids)]
                return "POST", f"{base}/agents/{agent_id}/deploy"

            def deploy_one(_client: Client, _index: int) -> tuple[str, str]:
                return "POST", f"{base}/agents/{world.agent_ids[0]}/deploy"

            def healthz_request(_client: Client, _index: int) -> tuple[str, str]:
                return "GET", "/healthz"

            # each pair that forms a ratio brackets the other: load that drifts during the run
            # moves both sides alike
            healthz_a = run(healthz_request, 200, 0.5)
            spread_a = run(deploy_spread, 202, 0.5)
            one = run(deploy_one, 202, 1.0)
            spread_b = run(deploy_spread, 202, 0.5)
            healthz_b = run(healthz_request, 200, 0.5)
            reads = Figures.of(run(lambda _client, _index: ("GET", base), 200, 1.0))
            deploys = Figures.of(spread_a, spread_b)
            one_agent = Figures.of(one)
            healthz = Figures.of(healthz_a, healthz_b)
            for name, figures in (
                ("deploy", deploys),
                ("deploy_one_agent", one_agent),
                ("get_namespace", reads),
                ("healthz", healthz),
            ):
                figure(f"{name}_per_s", figures.per_s)
                figure(f"{name}_p50_ms", figures.p50_ms, 2)
                figure(f"{name}_p99_ms", figures.p99_ms, 2)
            deploy_ratio = deploys.per_s / healthz.per_s
            one_agent_ratio = one_agent.per_s / deploys.per_s
            figure("deploy_per_healthz", deploy_ratio, 3)
            figure("one_agent_per_spread", one_agent_ratio, 3)
            say(
                f"deploy ({len(world.agent_ids)} Agents) / healthz = {deploy_ratio:.3f} "
                f"(target >= {DEPLOY_PER_HEALTHZ_TARGET}: "
                f"{'met' if deploy_ratio >= DEPLOY_PER_HEALTHZ_TARGET else 'not met'}); "
                f"1 Agent / {len(world.agent_ids)} Agents = {one_agent_ratio:.3f} "
                f"(target >= {ONE_AGENT_TARGET}: "
                f"{'met' if one_agent_ratio >= ONE_AGENT_TARGET else 'not met'}); "
                f"get_namespace / healthz = {reads.per_s / healthz.per_s:.3f}"
            )
            say(
                f"healthz per window: {Figures.of(healthz_a).per_s:.1f} before, "
                f"{Figures.of(healthz_b).per_s:.1f} after the deploys"
            )
            say(
                f"requests: deploy {deploys.count}, deploy_one_agent {one_agent.count}, "
                f"get_namespace {reads.count}, healthz {healthz.count}; errors: deploy "
                f"{deploys.errors or 0}, deploy_one_agent {one_agent.errors or 0}, "
                f"get_namespace {reads.errors or 0}, healthz {healthz.errors or 0}"
            )
            say(f"nudges waiting in occ.control: {broker.llen('occ.control')}")
        finally:
            if server is not None:
                api_server.stop(server)
            broker.flushdb()
            broker.close()
            databases.drop_database(urls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
