"""The API server a benchmark measures: gunicorn on a scratch database with a per-run pepper
and secret key, started, waited for until ``/readyz`` answers, and stopped."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from pathlib import Path
from typing import Any

from bench.support import answers
from tests.support import databases, servers
from tests.support.processes import poll

READY_TIMEOUT_S = 60.0


def start(
    urls: databases.DatabaseUrls,
    port: int,
    pepper: str,
    broker_url: str,
    log_file: Any,
    *,
    workers: int,
    options: tuple[str, ...],
) -> subprocess.Popen[bytes]:
    """gunicorn with ``workers`` processes on 127.0.0.1:``port``, its output in ``log_file``,
    with gunicorn's ``options`` (the worker class and what goes with it)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("OCC_")}
    env.update(
        {
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": urls.app,
            "OCC_MIGRATION_DATABASE_URL": urls.owner,
            "OCC_BROKER_URL": broker_url,
            "OCC_API_KEY_PEPPER": pepper,
            "OCC_SECRET_KEY": secrets.token_hex(32),
            # the bench's clients share one key and one address: it measures the server, not
            # the request limits (docs/security.md), which would refuse most of its requests
            "OCC_RATE_LIMIT_PER_PRINCIPAL": "off",
            "OCC_RATE_LIMIT_PER_ADDRESS": "off",
            "PYTHONUNBUFFERED": "1",
        }
    )
    command = [
        *servers.API_COMMAND,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *options,
        "--graceful-timeout",
        "5",
    ]
    return subprocess.Popen(command, env=env, stdout=log_file, stderr=subprocess.STDOUT)


def wait_ready(server: subprocess.Popen[bytes], port: int, log_path: str) -> None:
    """Return once ``/readyz`` answers; raise when gunicorn exits or is not ready in time."""

    def ready() -> bool:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}:\n{tail(log_path)}")
        return answers(port, "/readyz", timeout=2)

    if not poll(ready, timeout=READY_TIMEOUT_S, interval=0.1):
        raise RuntimeError(f"gunicorn was not ready in {READY_TIMEOUT_S} s:\n{tail(log_path)}")


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL if it is still there after 15 s."""
    if server.poll() is not None:
        return
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=15)


def tail(path: str, lines: int = 40) -> str:
    """The last ``lines`` lines of the server's log."""
    return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
