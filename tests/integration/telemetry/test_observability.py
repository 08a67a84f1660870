"""Log lines of every process parse as JSON: the Procfile's processes, run as the Procfile says.

The API (gunicorn), the control and driver workers, beat and Flower start from the Procfile's
command lines (through ``sh``, as a Procfile runner does) against the test PostgreSQL and a
private Redis with a password. After an HTTP request and a few idle claim and recovery ticks
they are stopped; every line any of them wrote is a JSON object with time, level, service and
logger, no secret appears, and the idle ticks wrote nothing at INFO.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import installation
from occ.state.db import Database
from tests.support import databases, servers
from tests.support.processes import Process, wait_for

ROOT = Path(__file__).resolve().parents[3]
APPS = ("web", "control", "worker", "beat", "flower")
TICK_MS = 300
REDIS_PASSWORD = "broker-secret-8d1f"
FLOWER_AUTH = "viewer:flower-secret-5c2e"
PEPPER = "pepper-secret-77a0" * 2
SECRET_KEY = "key-secret-0b9e" * 3
_TICK = re.compile(r"occ\.(claim|recover_stale|observe_runtimes|prune)[\[ ]")
"""Celery's lines about one periodic task: ``Task occ.claim[id] received``, ``Sending due
task occ.claim (occ.claim)``."""
_ASSIGNMENTS = re.compile(r"(?:[A-Z_][A-Z0-9_]*=\S*\s+)*")


def _procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    commands = {}
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            commands[name.strip()] = command.strip()
    return commands


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[servers.RedisServer]:
    server = servers.RedisServer(tmp_path / "redis", password=REDIS_PASSWORD)
    server.start()
    yield server
    server.close()


@pytest.fixture
def started() -> Iterator[dict[str, Process]]:
    running: dict[str, Process] = {}
    yield running
    for process in running.values():  # a failed test still leaves nothing running
        if process.popen.poll() is None:
            process.kill_group()


def _env(database_urls: databases.DatabaseUrls, broker_url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCC_", "FLOWER_"))}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "HOME": str(tmp_path),  # gunicorn's control socket, private to this test
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": database_urls.app,
            "OCC_BROKER_URL": broker_url,
            "OCC_LOCAL_ROOT": str(tmp_path / "local"),
            "OCC_API_KEY_PEPPER": PEPPER,
            "OCC_SECRET_KEY": SECRET_KEY,
            "OCC_CLAIM_INTERVAL_MS": str(TICK_MS),
            "OCC_RECOVERY_INTERVAL_MS": str(TICK_MS),
            "OCC_MAINTENANCE_INTERVAL_MS": str(TICK_MS),
            "OCC_LOG_LEVEL": "INFO",
            "FLOWER_BASIC_AUTH": FLOWER_AUTH,
        }
    )
    return env


def _start(
    name: str, command: str, env: dict[str, str], directory: Path, extra: dict[str, str]
) -> Process:
    assignments = _ASSIGNMENTS.match(command)
    assert assignments is not None
    execs_itself = " && exec " in command  # a script that checks first (Flower's credentials)
    program = (
        command if execs_itself else f"{assignments.group(0)}exec {command[assignments.end() :]}"
    )
    log = directory / f"{name}.log"
    with log.open("wb") as handle:
        popen = subprocess.Popen(
            ["sh", "-c", program],  # exec: signals reach the program itself
            cwd=directory,
            env={**env, **extra},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Process(name, popen, log)


def _get(url: str, auth: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _tasks_run(flower_url: str, name: str) -> int:
    """How many ``name`` tasks the workers ran, as Flower's worker inspection reports (the
    periodic ticks send no task events, so they never show among Flower's tasks)."""
    status, body = _get(f"{flower_url}/api/workers?refresh=1", FLOWER_AUTH)
    if status != 200:
        return 0
    workers: dict[str, Any] = json.loads(body)
    return sum(
        int(((info.get("stats") or {}).get("total") or {}).get(name, 0))
        for info in workers.values()
        if isinstance(info, dict)
    )


def _lines(process: Process) -> list[str]:
    return [line for line in process.text().splitlines() if line.strip()]


def test_log_lines_of_every_process_parse_as_json(
    db: Database,
    database_urls: databases.DatabaseUrls,
    redis_server: servers.RedisServer,
    tmp_path: Path,
    started: dict[str, Process],
) -> None:
    installation.bootstrap_installation(db, name="logs", admin_name="admin")
    env = _env(database_urls, redis_server.url, tmp_path)
    commands = _procfile()
    ports = {"web": servers.free_port(), "flower": servers.free_port()}
    for name in APPS:
        extra = {"PORT": str(ports.get(name, 0))}
        if name in ("control", "worker"):
            extra["OCC_WORKER_READINESS_PATH"] = str(tmp_path / f"{name}.ready")
        started[name] = _start(name, commands[name], env, tmp_path, extra)

    api, flower = f"http://127.0.0.1:{ports['web']}", f"http://127.0.0.1:{ports['flower']}"

    def everyone_ready() -> bool:
        for process in started.values():
            if process.popen.poll() is not None:
                pytest.fail(f"{process.name} exited: {process.text()[-3000:]}")
        markers = all((tmp_path / f"{name}.ready").exists() for name in ("control", "worker"))
        return markers and _get(f"{api}/healthz")[0] == 200 and _get(flower, FLOWER_AUTH)[0] == 200

    wait_for(everyone_ready, timeout=45, interval=0.2, message="every process to be ready")
    assert _get(f"{api}/v1/no-such-route")[0] == 404
    # idle ticks: beat sends them, the control worker runs them (Flower inspects the worker)
    wait_for(
        lambda: _tasks_run(flower, "occ.claim") >= 3 and _tasks_run(flower, "occ.recover_stale"),
        timeout=30,
        interval=0.2,
        message="idle claim and recovery ticks",
    )
    for process in started.values():
        process.signal(signal.SIGTERM)
    for process in started.values():
        process.popen.wait(25)

    secrets = (REDIS_PASSWORD, FLOWER_AUTH.split(":")[1], PEPPER, SECRET_KEY)
    database_password = sa.engine.make_url(database_urls.app).password
    for process in started.values():
        lines = _lines(process)
        assert lines, f"{process.name} wrote nothing"
        for line in lines:
            parsed: Any = json.loads(line)  # fails the test on a line that is not JSON
            assert isinstance(parsed, dict), line
            assert {"time", "level", "service", "logger"} <= set(parsed), line
            assert "event" in parsed or "message" in parsed, line
            assert parsed["level"] != "info" or not _TICK.search(line), line
            assert parsed.get("event") not in ("worker.claimed", "worker.recovered"), line
            for secret in (*secrets, database_password):
                assert not secret or secret not in line, (process.name, line)
    web = [json.loads(line) for line in _lines(started["web"])]
    assert {line["service"] for line in web} == {"occ-api"}
    assert any(line["logger"] == "gunicorn.error" for line in web), "gunicorn's own lines"
    assert any(line.get("event") == "http.completed" and line.get("status") == 404 for line in web)
    beat = [json.loads(line) for line in _lines(started["beat"])]
    assert {line["service"] for line in beat} == {"occ-beat"}
