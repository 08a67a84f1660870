"""gunicorn's master with occ's hooks, for real: it waits for the bootstrap before it binds the
port or forks a worker, serves once the Installation exists, and after its bound exits 3 with
``api.startup-error`` saying what lacks."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from occ.controller import installation
from occ.state.db import Database
from occ.tasks import lifecycle
from occ.web import gunicorn_hooks, serving
from tests.support import databases, processes, servers


def _start(
    database_urls: databases.DatabaseUrls, tmp_path: Path, port: int, wait_ms: int
) -> processes.Process:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OCC_")},
        "OCC_ENV": "development",
        "OCC_DATABASE_URL": database_urls.app,
        "OCC_BROKER_URL": os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "OCC_STARTUP_WAIT_MS": str(wait_ms),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    (tmp_path / "metrics").mkdir(exist_ok=True)
    argv = [
        sys.executable, "-m", "gunicorn", "occ.web.app:create_app()",
        "--config", gunicorn_hooks.CONFIG_OPTION, "--worker-class", serving.WORKER_CLASS,
        "--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "2",
    ]  # fmt: skip
    return processes.start(tmp_path, "gunicorn", argv, env)


def _events(process: processes.Process, event: str) -> list[dict[str, Any]]:
    found = []
    for line in process.text().splitlines():
        if line.startswith("{") and f'"event":"{event}"' in line:
            found.append(json.loads(line))
    return found


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_the_master_waits_for_the_bootstrap_past_the_worker_timeout(
    database_urls: databases.DatabaseUrls, db: Database, tmp_path: Path
) -> None:
    port = servers.free_port()
    api = _start(database_urls, tmp_path, port, wait_ms=60_000)
    try:
        processes.wait_for(
            lambda: _events(api, "startup.waiting") or not api.alive(),
            timeout=30,
            message="gunicorn's master to wait",
        )
        assert api.alive(), api.tail()
        assert not _answers(port), "no port before the database is ready"
        # past the worker timeout (2 s): the wait is the master's, no timeout cuts it short
        waiting_since = time.monotonic()
        processes.wait_for(
            lambda: time.monotonic() - waiting_since > 3 or not api.alive(),
            timeout=10,
            interval=0.2,
            message="the worker timeout to pass",
        )
        assert api.alive(), api.tail()
        installation.bootstrap_installation(db, name="hooks", admin_name="admin")
        processes.wait_for(
            lambda: _answers(port) or not api.alive(), timeout=30, message="the API to answer"
        )
        assert api.alive(), api.tail()
        assert _events(api, "startup.ready")
        assert "WORKER TIMEOUT" not in api.text()
    finally:
        api.stop()


def test_the_master_gives_up_after_its_bound(
    database_urls: databases.DatabaseUrls, db: Database, tmp_path: Path
) -> None:
    api = _start(database_urls, tmp_path, servers.free_port(), wait_ms=1_500)
    try:
        assert api.popen.wait(60) == lifecycle.EXIT_NOT_READY, api.tail()
        [event] = _events(api, "api.startup-error")
        assert event["error"] == "DependencyUnavailable"
        assert event["reason"].startswith("the installation is not bootstrapped")
        assert databases.APP_PASSWORD not in api.text()
        assert "Booting worker" not in api.text()
    finally:
        api.stop()
