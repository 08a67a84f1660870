"""Benchmark of the API's server under slow clients and under concurrency: ``name=value`` lines.

Not a test: it asserts nothing, it measures. Like ``bench/api_bench.py`` it creates a fresh
database on the server of ``OCC_TEST_DATABASE_URL``, bootstraps the Installation and an
administrator key, and creates one Namespace through the API. Then, side by side in one run:

* **occ's server**: gunicorn with occ's worker and logger classes (``occ.web.serving.CLASSES``,
  the gevent worker with read timeouts), 2 workers as in compose and Kubernetes;
* **the baseline**: the same app and logger on gunicorn's sync worker, 2 workers, as occ ran
  before.

Phases, each ``--duration`` seconds after ``--warmup`` unmeasured seconds, with ``--threads``
keep-alive client threads (default 4):

1. idle: ``GET /healthz`` and an authenticated ``GET /v1/namespaces/{id}`` on occ's server;
2. slow: the same while ``--slow`` connections (default 200) are held open, each trickling one
   byte of a request line every second and reopened when the server closes it (a header timeout);
3. concurrency: ``--clients`` threads (default 50) loop the authenticated GET against occ's
   server, then against the baseline.

stdout gets exactly::

    healthz_idle_p99_ms          /healthz p99 with no slow connection (client side)
    healthz_slow_p99_ms          /healthz p99 with the slow connections held
    healthz_slow_per_idle        their ratio (target <= 2)
    get_idle_p99_ms              the authenticated GET's p99, idle
    get_slow_p99_ms              its p99 with the slow connections held
    get_slow_per_idle            their ratio (target <= 2)
    slow_connections_open        slow connections open when the slow phase ended
    concurrent_per_s             authenticated GETs/s, 50 clients, occ's server
    concurrent_p99_ms
    concurrent_sync_per_s        the same against the sync worker (the baseline)
    concurrent_sync_p99_ms
    concurrent_per_sync          concurrent_per_s / concurrent_sync_per_s (reported)

stderr gets the settings, the ratios against their targets and the error counts. Compare ratios,
not absolute figures, across runs and machines.

    OCC_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/serving.py [--duration 5] [--slow 200] [--clients 50]
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import api_server
from bench.api_bench import bootstrap, redis_url
from bench.api_load import Client, Figures, measure
from bench.support import figure, say
from occ.web import serving
from tests.support import databases, servers

WORKERS = 2
P99_TARGET = 2.0
"""p99 with the slow connections held, as a multiple of the idle p99 (at most)."""
SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Slow: "


class SlowClients:
    """``count`` connections that trickle a request line one byte a second, kept open."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.stop = threading.Event()
        self.reopened = 0
        self.open = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SlowClients:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def _connect(self) -> socket.socket | None:
        try:
            connection = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return None
        connection.setblocking(False)
        return connection

    def _run(self) -> None:
        held: list[socket.socket | None] = [self._connect() for _ in range(self.count)]
        sent = [0] * self.count
        while not self.stop.is_set():
            for index, connection in enumerate(held):
                if connection is None:
                    held[index] = self._connect()
                    sent[index] = 0
                    self.reopened += 1
                    continue
                try:
                    if connection.recv(1) == b"":  # closed by the server
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    connection.close()
                    held[index] = None
                    continue
                byte = SLOW_HEAD[sent[index] : sent[index] + 1] or b"a"
                try:
                    connection.send(byte)
                    sent[index] += 1
                except OSError:
                    connection.close()
                    held[index] = None
            self.open = sum(1 for connection in held if connection is not None)
            self.stop.wait(1.0)
        for connection in held:
            if connection is not None:
                connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per phase (5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds (1)")
    parser.add_argument("--threads", type=int, default=4, help="client threads (4)")
    parser.add_argument("--slow", type=int, default=200, help="slow connections held (200)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (50)")
    args = parser.parse_args(argv)
    if not os.environ.get("OCC_TEST_DATABASE_URL"):
        say("set OCC_TEST_DATABASE_URL to a PostgreSQL server to create a database on")
        return 2

    broker_url = redis_url()
    urls = databases.create_test_database(f"occ_serving_bench_{os.getpid()}")
    pepper = secrets.token_hex(32)
    occ_port, sync_port = servers.free_port(), servers.free_port()
    running: list[subprocess.Popen[bytes]] = []
    with tempfile.NamedTemporaryFile(prefix="occ-serving-bench-", suffix=".log") as server_log:
        try:
            key = bootstrap(urls, pepper)
            for port, worker_class in (
                (occ_port, serving.WORKER_CLASS),
                (sync_port, "sync"),
            ):
                options = ("--worker-class", worker_class, "--logger-class", serving.LOGGER_CLASS)
                running.append(
                    api_server.start(
                        urls, port, pepper, broker_url, server_log, workers=WORKERS, options=options
                    )
                )
                api_server.wait_ready(running[-1], port, server_log.name)
            setup = Client(occ_port, key)
            namespace = setup.json("POST", "/v1/namespaces", {"name": "bench"}, expect=201)
            setup.close()
            path = f"/v1/namespaces/{namespace['id']}"
            say(
                f"gunicorn: {WORKERS} workers each, occ's ({serving.WORKER_CLASS}) and the sync "
                f"worker; {args.threads} client threads, {args.slow} slow connections, "
                f"{args.clients} concurrent clients; {args.warmup:g} s warm-up + "
                f"{args.duration:g} s per phase"
            )

            def run(port: int, target: str, threads: int) -> Figures:
                return Figures.of(
                    measure(
                        port,
                        key,
                        threads=threads,
                        warmup_s=args.warmup,
                        duration_s=args.duration,
                        request=lambda _client, _index: ("GET", target),
                        expect=200,
                    )
                )

            healthz_idle = run(occ_port, "/healthz", args.threads)
            get_idle = run(occ_port, path, args.threads)
            with SlowClients(occ_port, args.slow) as slow:
                time.sleep(2.0)  # every slow connection opened and trickling
                healthz_slow = run(occ_port, "/healthz", args.threads)
                get_slow = run(occ_port, path, args.threads)
                still_open = slow.open
            concurrent = run(occ_port, path, args.clients)
            concurrent_sync = run(sync_port, path, args.clients)

            healthz_ratio = healthz_slow.p99_ms / healthz_idle.p99_ms
            get_ratio = get_slow.p99_ms / get_idle.p99_ms
            throughput_ratio = concurrent.per_s / concurrent_sync.per_s
            figure("healthz_idle_p99_ms", healthz_idle.p99_ms, 2)
            figure("healthz_slow_p99_ms", healthz_slow.p99_ms, 2)
            figure("healthz_slow_per_idle", healthz_ratio, 3)
            figure("get_idle_p99_ms", get_idle.p99_ms, 2)
            figure("get_slow_p99_ms", get_slow.p99_ms, 2)
            figure("get_slow_per_idle", get_ratio, 3)
            figure("slow_connections_open", still_open, 0)
            figure("concurrent_per_s", concurrent.per_s)
            figure("concurrent_p99_ms", concurrent.p99_ms, 2)
            figure("concurrent_sync_per_s", concurrent_sync.per_s)
            figure("concurrent_sync_p99_ms", concurrent_sync.p99_ms, 2)
            figure("concurrent_per_sync", throughput_ratio, 3)
            for name, ratio in (("healthz", healthz_ratio), ("get", get_ratio)):
                verdict = "met" if ratio <= P99_TARGET else "not met"
                say(f"{name} p99 slow / idle = {ratio:.3f} (target <= {P99_TARGET}: {verdict})")
            say(
                f"{args.clients} clients: occ's worker {concurrent.per_s:.1f}/s, sync worker "
                f"{concurrent_sync.per_s:.1f}/s ({throughput_ratio:.2f}x)"
            )
            say(
                "errors: "
                + ", ".join(
                    f"{name} {figures.errors or 0}"
                    for name, figures in (
                        ("healthz idle", healthz_idle),
                        ("get idle", get_idle),
                        ("healthz slow", healthz_slow),
                        ("get slow", get_slow),
                        ("concurrent", concurrent),
                        ("concurrent sync", concurrent_sync),
                    )
                )
            )
        finally:
            for server in running:
                api_server.stop(server)
            databases.drop_database(urls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
