"""occ's API in a real gunicorn process with occ's worker class, and raw-socket helpers to talk
to it: what the serving tests share."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from occ.web import serving
from tests.support import databases, processes, servers


@contextlib.contextmanager
def running(
    database_urls: databases.DatabaseUrls,
    log_path: Path,
    env: Mapping[str, str],
    arguments: Sequence[str] = (),
) -> Iterator[int]:
    """gunicorn with occ's worker class and one worker on a free loopback port, with occ's
    settings ``env`` and gunicorn's ``arguments``; yields the port, stops gunicorn at the end."""
    port = servers.free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OCC_")},
        "OCC_ENV": "development",
        "OCC_DATABASE_URL": database_urls.app,
        "OCC_BROKER_URL": os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "OCC_API_KEY_PEPPER": "serving-test-pepper",
        # its unauthenticated requests come from 127.0.0.1 like every other test's
        "OCC_RATE_LIMIT_FAILED_AUTH": "off",
        "OCC_RATE_LIMIT_PER_PRINCIPAL": "off",
        "OCC_RATE_LIMIT_PER_ADDRESS": "off",
        **env,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "occ.web.app:create_app()",
                "--worker-class",
                serving.WORKER_CLASS,
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                *arguments,
            ],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        processes.wait_for(
            lambda: process.poll() is not None or status_of(port, "/healthz") == 200,
            timeout=30,
            message="gunicorn to answer /healthz",
        )
        assert process.poll() is None, log_path.read_text()[-3000:]
        yield port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


Answer = tuple[int, dict[str, str], bytes]
"""An HTTP answer: its status, its header fields (names in lower case) and its body."""


def parse(received: bytes) -> Answer:
    """The answer in ``received``, everything the server sent before it closed."""
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def exchange(port: int, raw: bytes) -> Answer:
    """Send ``raw`` and read the whole answer (gunicorn closes the connection after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(raw)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return parse(received)


def status_of(port: int, path: str) -> int | None:
    """The status a GET of ``path`` answers; ``None`` when the connection fails. The connection
    closes after the answer: kept alive, it would hold one of the worker's connections."""
    raw = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    try:
        status, _, _ = exchange(port, raw)
    except OSError:
        return None
    return status


def closed_by_server(connection: socket.socket, within_s: float) -> bool:
    """Whether the server closed ``connection`` (EOF or reset) within ``within_s``."""
    connection.settimeout(within_s)
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
