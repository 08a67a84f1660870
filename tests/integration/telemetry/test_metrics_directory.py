"""Claiming prometheus-client's multiprocess directory, in fresh interpreters (the claim is
per process): the first process of a program clears what a previous run left, its forked
children share the claim, any other process writes nothing there and cannot start a program.
And the API's directory in a real gunicorn with two workers: one scrape sums both, a dead
worker's counts stay and its live gauges go, and a restart serves nothing stale."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.controller import installation
from occ.state import api_keys
from occ.state.db import Database
from occ.tasks import lifecycle
from occ.telemetry import metrics, metrics_directory
from occ.web import gunicorn_hooks, serving
from tests.support import databases, metric_files, processes, servers

PEPPER = "metrics-directory-pepper"
HEALTHZ = 'occ_http_requests_total{method="GET",route="/healthz",status="200"}'


class Api:
    """gunicorn (two workers, occ's hooks) on a free loopback port, over ``directory``."""

    def __init__(self, urls: databases.DatabaseUrls, directory: Path, log_dir: Path) -> None:
        self.port = servers.free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OCC_")},
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": urls.app,
            "OCC_BROKER_URL": os.environ.get("OCC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
            "OCC_API_KEY_PEPPER": PEPPER,
            metrics_directory.VARIABLE: str(directory),
        }
        self.log_dir = log_dir
        self.process: processes.Process | None = None
        self.runs = 0

    def start(self) -> None:
        argv = [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()"]
        argv += ["--config", gunicorn_hooks.CONFIG_OPTION, *serving.CLASSES]
        argv += ["--bind", f"127.0.0.1:{self.port}", "--workers", "2"]
        self.runs += 1
        process = self.process = processes.start(self.log_dir, f"api-{self.runs}", argv, self.env)
        processes.wait_for(
            lambda: not process.alive() or self.status("/readyz") == 200,
            timeout=60,
            message="gunicorn to answer /readyz",
        )
        assert process.alive(), process.tail(3000)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=30)

    def status(self, path: str) -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return int(r.status)
        except OSError:
            return None

    def scrape(self, key: str) -> str:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/metrics", headers={"Authorization": f"Bearer {key}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return str(response.read().decode())


@pytest.fixture
def key(db: Database) -> str:
    boot = installation.bootstrap_installation(db, name="metrics", admin_name="admin")
    assert boot.admin_principal_id is not None
    with db.transaction() as session:
        return api_keys.mint(session, principal_id=boot.admin_principal_id, pepper=PEPPER).plaintext


@pytest.fixture
def api(database_urls: databases.DatabaseUrls, tmp_path: Path) -> Iterator[Api]:
    server = Api(database_urls, tmp_path / "metrics" / "web", tmp_path)
    try:
        yield server
    finally:
        server.stop()


def _plant(directory: Path, name: str, metric: str, labels: dict[str, str], value: float) -> None:
    """A file as a process of an earlier run would have left it."""
    metric_files.plant(
        directory / name, metric, value, help_text="HTTP requests answered.", labels=labels
    )


def _healthz_by_pid(directory: Path) -> dict[int, float]:
    """Each process's own count of answered ``GET /healthz``, from its file."""
    counts: dict[int, float] = {}
    for path in directory.glob("counter_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1])
        for key, value in metric_files.samples(path):
            if '"/healthz"' in key and "occ_http_requests_total" in key:
                counts[pid] = counts.get(pid, 0.0) + value
    return counts


def _total(exposition: str) -> float:
    found = re.search(re.escape(HEALTHZ) + r" (\S+)", exposition)
    return float(found.group(1)) if found else 0.0


def test_one_scrape_sums_both_workers_and_a_restart_serves_nothing_stale(
    api: Api, key: str
) -> None:
    directory = Path(api.env[metrics_directory.VARIABLE])
    directory.mkdir(parents=True)
    labels = {"method": "GET", "route": "/healthz", "status": "200"}
    _plant(directory, "counter_4194000.db", "occ_http_requests_total", labels, 1000.0)
    api.start()
    assert "counter_4194000.db" not in {p.name for p in directory.iterdir()}

    # each connection goes to whichever worker accepts it first: ask until both have answered
    sent = 0

    def both_answered() -> bool:
        nonlocal sent
        assert api.status("/healthz") == 200
        sent += 1
        return len(_healthz_by_pid(directory)) == 2

    processes.wait_for(both_answered, timeout=30, message="both workers to answer /healthz")
    by_pid = _healthz_by_pid(directory)
    assert sum(by_pid.values()) == sent and min(by_pid.values()) >= 1.0, (by_pid, sent)
    assert _total(api.scrape(key)) == sent

    # a worker that dies: its counts stay in the sum, its live gauges are forgotten
    dead = min(by_pid)
    _plant(directory, f"gauge_livesum_{dead}.db", "occ_probe", {}, 1.0)
    os.kill(dead, signal.SIGKILL)
    processes.wait_for(
        lambda: not (directory / f"gauge_livesum_{dead}.db").exists(),
        timeout=30,
        message="gunicorn's arbiter to mark the dead worker",
    )
    processes.wait_for(lambda: api.status("/readyz") == 200, timeout=30, message="a new worker")
    assert _total(api.scrape(key)) == sent

    # the next run starts from nothing, whatever pids it gets
    api.stop()
    assert _healthz_by_pid(directory)
    _plant(directory, "counter_4194001.db", "occ_http_requests_total", labels, 1000.0)
    api.start()
    assert _healthz_by_pid(directory) == {}
    assert api.status("/healthz") == 200
    exposition = api.scrape(key)
    assert _total(exposition) == 1.0
    assert 'occ_build_info{python="' in exposition and metrics.version() in exposition


def test_a_second_program_on_the_same_directory_does_not_start(
    api: Api, database_urls: databases.DatabaseUrls, key: str, tmp_path: Path
) -> None:
    api.start()
    directory = Path(api.env[metrics_directory.VARIABLE])
    files = sorted(path.name for path in directory.glob("*.db"))
    second = Api(database_urls, directory, tmp_path)
    argv = [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()"]
    argv += ["--config", gunicorn_hooks.CONFIG_OPTION, "--bind", f"127.0.0.1:{second.port}"]
    process = subprocess.run(
        argv, env=second.env, capture_output=True, text=True, timeout=60, check=False
    )
    output = process.stdout + process.stderr
    assert process.returncode == lifecycle.EXIT_NOT_READY, output[-3000:]
    assert "api.startup-error" in output and "in use by another program" in output
    assert sorted(path.name for path in directory.glob("*.db")) == files
    assert api.status("/healthz") == 200


# -- the claim, in fresh interpreters ----------------------------------------------------------

PRELUDE = """
import os, sys, prometheus_client
from occ.foundation import errors
from occ.telemetry import metrics_directory
found = metrics_directory.claim()
counter = prometheus_client.Counter("probe_total", "A probe.")
"""


def _run(directory: Path | None, code: str, stdin: int | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != metrics_directory.VARIABLE}
    if directory is not None:
        env[metrics_directory.VARIABLE] = str(directory)
    return subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=stdin,
    )


def _output(directory: Path | None, code: str) -> str:
    process = _run(directory, code)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    return out.strip()


def _files(directory: Path) -> set[str]:
    return {path.name for path in directory.glob("*.db")}


def test_the_first_process_creates_the_directory_and_clears_stale_files(tmp_path: Path) -> None:
    directory = tmp_path / "metrics" / "web"
    directory.mkdir(parents=True)
    (directory / "counter_4242.db").write_bytes(b"stale")
    (directory / "histogram_7.db").write_bytes(b"stale")
    (directory / "notes.txt").write_text("kept")
    out = _output(directory, "counter.inc(); print(found.claimed, os.getpid())")
    claimed, pid = out.split()
    assert claimed == "True"
    assert _files(directory) == {f"counter_{pid}.db"}
    assert (directory / "notes.txt").exists()
    # the next run (the lock is free again) clears the last run's files before its own exist
    claimed, next_pid = _output(directory, "print(found.claimed, os.getpid())").split()
    assert claimed == "True"
    assert _files(directory) == {f"counter_{next_pid}.db"}


def test_forked_children_share_the_claim_and_others_write_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "drivers"
    holder = _run(
        directory,
        """
        child = os.fork()
        if child == 0:
            counter.inc()  # a pool process: its own file in the program's directory
            os._exit(0 if metrics_directory.current().claimed else 1)
        _, status = os.waitpid(child, 0)
        print(found.claimed, os.waitstatus_to_exitcode(status), child, flush=True)
        sys.stdin.readline()
        """,
        stdin=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdin is not None
    claimed, child_status, child = holder.stdout.readline().split()
    assert (claimed, child_status) == ("True", "0")
    program = {f"counter_{holder.pid}.db", f"counter_{child}.db"}
    assert _files(directory) == program
    # a health check, a one-off command or a second program given the same directory
    out = _output(
        directory,
        """
        counter.inc()
        try:
            metrics_directory.require_claimed()
        except errors.DependencyUnavailable as exc:
            print(found.claimed, exc.detail)
        """,
    )
    assert out.startswith(f"False {metrics_directory.VARIABLE} {directory}: in use by another")
    assert f"(pid {holder.pid})" in out
    assert _files(directory) == program, "a bystander wrote into the directory"
    holder.communicate("\n", timeout=30)
    assert holder.returncode == 0


def test_without_a_directory_nothing_is_claimed_or_required(tmp_path: Path) -> None:
    out = _output(None, "metrics_directory.require_claimed(); print(found)")
    assert out == "Claim(directory=None, claimed=False, reason='')"


def test_a_directory_that_cannot_be_made_is_not_claimed(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    out = _output(tmp_path / "a-file" / "web", "counter.inc(); print(found.claimed, found.reason)")
    assert out.startswith("False cannot be used")
