"""``occ dev`` from a clean home: ready line, a Namespace to ``ready``, a clean stop, a restart;
children killed with SIGKILL are restarted; workers failing their start-up checks stop it all.

Runs the real command as a subprocess with no ``OCC_*`` variables, so it takes the fresh-machine
path: embedded PostgreSQL (pgserver), a Redis process, migrations, bootstrap, gunicorn, two
Celery workers and beat. After Ctrl-C nothing it started may still run and no work item may be
left ``claimed`` (checked by starting the embedded PostgreSQL again).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import sqlalchemy as sa

from occ.dev import postgres
from tests.e2e import dev_process
from tests.support.processes import wait_for

pytestmark = pytest.mark.timeout(420)

READY_DEADLINE_S = 120.0
NAMESPACE_DEADLINE_S = 30.0
STOP_DEADLINE_S = dev_process.STOP_DEADLINE_S


@pytest.fixture
def run_dev() -> Iterator[Any]:
    started: list[dev_process.DevProcess] = []

    def run(home: Path) -> dev_process.DevProcess:
        dev = dev_process.start(home)
        started.append(dev)
        return dev

    yield run
    dev_process.stop_all(started)


def _request(
    method: str, url: str, key: str, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _wait_for_status(api_url: str, key: str, namespace_id: str, wanted: str) -> None:
    deadline = time.monotonic() + NAMESPACE_DEADLINE_S
    status = None
    while time.monotonic() < deadline:
        code, document = _request("GET", f"{api_url}/v1/namespaces/{namespace_id}", key)
        assert code == 200, document
        status = document["data"]["status"]
        if status == wanted:
            return
        assert status == "provisioning", document
        time.sleep(0.2)
    raise AssertionError(
        f"namespace {namespace_id} is {status!r}, not {wanted!r}, after {NAMESPACE_DEADLINE_S} s"
    )


def _processes_started_by(pids: dict[str, int]) -> list[psutil.Process]:
    """occ dev, everything below it, and the postgres server with its backends."""
    found: list[psutil.Process] = []
    for name, pid in pids.items():
        try:
            process = psutil.Process(pid)
            found.append(process)
            if name in ("dev", "postgres"):
                found.extend(process.children(recursive=True))
        except psutil.NoSuchProcess:
            pytest.fail(f"{name} (pid {pid}) listed in dev.pids is not running")
    return found


def _still_running(processes: list[psutil.Process]) -> list[str]:
    left = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {' '.join(process.cmdline())}")
        except psutil.NoSuchProcess:
            continue
    return left


def _group_members(groups: set[int]) -> list[str]:
    left = []
    for process in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if os.getpgid(process.pid) in groups and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {' '.join(process.info['cmdline'] or [])}")
        except (psutil.NoSuchProcess, ProcessLookupError):
            continue
    return left


def _work_states(pgdata: Path) -> dict[str, int]:
    """Count work rows per state, with the embedded PostgreSQL started again for the check."""
    server = postgres.EmbeddedPostgres(pgdata)
    server.start()
    try:
        engine = sa.create_engine(server.url("occ"), poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    sa.text("SELECT state, count(*) FROM occ.controller_work GROUP BY state")
                ).all()
        finally:
            engine.dispose()
    finally:
        assert server.stop()
    return {state: count for state, count in rows}


def _follow_once(url: str) -> tuple[int, str]:
    """GET ``url`` without following redirects: the status and the ``Location``."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=10) as answer:
            return answer.status, answer.headers.get("Location", "")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Location", "")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_occ_dev_serves_a_namespace_and_stops_cleanly(run_dev: Any, home: Path) -> None:

    # -- a fresh home reaches dev.ready ---------------------------------------------------------
    started = time.monotonic()
    dev = run_dev(home)
    ready = dev.wait_ready(READY_DEADLINE_S)
    startup_s = time.monotonic() - started
    assert set(ready) == {
        "event",
        "apiUrl",
        "adminKeyFile",
        "consoleUrl",
        "signInLinkFile",
        "brokerUrl",  # the Redis occ dev runs (it has no password): for Flower
    }
    assert ready["brokerUrl"].startswith("redis://127.0.0.1:")
    assert ready["event"] == "dev.ready"
    assert ready["apiUrl"].startswith("http://127.0.0.1:")
    key_file = Path(ready["adminKeyFile"])
    assert key_file == home.resolve() / "admin.key"
    assert _mode(key_file) == 0o600
    assert _mode(home / "secrets.env") == 0o600
    key = key_file.read_text().strip()
    assert key.startswith("occ_")
    assert key not in "".join(dev.stdout) + "".join(dev.stderr)
    assert ready["consoleUrl"] == ready["apiUrl"] + "/console"
    link_file = Path(ready["signInLinkFile"])
    assert link_file == home.resolve() / "sign-in.url" and _mode(link_file) == 0o600
    link = link_file.read_text().strip()
    assert link.startswith(ready["apiUrl"] + "/auth/one-time?token=")
    assert link.split("token=")[1] not in "".join(dev.stdout) + "".join(dev.stderr)
    assert _follow_once(link) == (303, "/console")
    assert _follow_once(link)[0] == 401  # spent

    pids = json.loads((home / "run" / "dev.pids").read_text())
    assert set(pids) == {"dev", "postgres", "redis", "api", "control", "drivers", "beat"}
    assert pids["dev"] == dev.process.pid
    started_processes = _processes_started_by(pids)
    groups = {pids[name] for name in ("redis", "api", "control", "drivers", "beat")}

    # -- a Namespace goes to ready through the API, the workers and beat ------------------------
    api_url = ready["apiUrl"]
    code, document = _request("POST", f"{api_url}/v1/namespaces", key, {"name": "e2e"})
    assert code == 201, document
    assert document["data"]["status"] == "provisioning"
    namespace_id = document["data"]["id"]
    _wait_for_status(api_url, key, namespace_id, "ready")

    # work in flight at Ctrl-C: the shutdown must not leave its claim behind
    code, document = _request("POST", f"{api_url}/v1/namespaces", key, {"name": "e2e-late"})
    assert code == 201, document

    # -- Ctrl-C: exit 0, nothing left running ---------------------------------------------------
    started_processes += _live_descendants(pids)
    assert dev.stop(signal.SIGINT, STOP_DEADLINE_S) == 0, "".join(dev.stderr)
    assert _still_running(started_processes) == []
    assert _group_members(groups) == []
    assert [line for line in dev.stdout if line.strip()] == [json.dumps(ready) + "\n"]
    assert "occ: error" not in "".join(dev.stderr)
    assert not (home / "run" / "dev.pids").exists()
    assert list((home / "run").glob("*.ready")) == []
    for name in ("dev", "api", "control", "drivers", "beat"):  # every process logs JSON lines
        for line in (home / "logs" / f"{name}.log").read_text().splitlines():
            assert not line.strip() or isinstance(json.loads(line), dict), (name, line)

    states = _work_states(home / "pg")
    assert states.get("claimed", 0) == 0, states
    assert states.get("succeeded", 0) >= 1, states

    # -- a restart reuses the database, the key and the secrets; SIGTERM stops it too ----------
    secrets_before = (home / "secrets.env").read_text()
    again = run_dev(home)
    ready_again = again.wait_ready(READY_DEADLINE_S)
    assert ready_again["adminKeyFile"] == str(key_file)
    assert key_file.read_text().strip() == key
    assert (home / "secrets.env").read_text() == secrets_before
    code, document = _request("GET", f"{ready_again['apiUrl']}/v1/namespaces/{namespace_id}", key)
    assert code == 200 and document["data"]["status"] == "ready", document
    # the logs of the first run are kept: appended to, not truncated
    dev_log = (home / "logs" / "dev.log").read_text()
    ready_lines = [
        line
        for line in map(json.loads, dev_log.splitlines())
        if line.get("message", "").startswith("ready: http://127.0.0.1:")
    ]
    assert len(ready_lines) == 2, dev_log[-2000:]
    drivers_log = (home / "logs" / "drivers.log").read_text()
    assert drivers_log.count('"event":"worker.started"') == 2, drivers_log[-2000:]
    pids_again = json.loads((home / "run" / "dev.pids").read_text())
    processes_again = _processes_started_by(pids_again)
    processes_again += _live_descendants(pids_again)
    assert again.stop(signal.SIGTERM, STOP_DEADLINE_S) == 0, "".join(again.stderr)
    assert _still_running(processes_again) == []
    assert _work_states(home / "pg").get("claimed", 0) == 0

    print(f"occ dev from a clean home: ready in {startup_s:.1f} s")


def _live_descendants(pids: dict[str, int]) -> list[psutil.Process]:
    """Everything below occ dev and postgres now (gunicorn and prefork children, backends)."""
    found: list[psutil.Process] = []
    for pid in (pids["dev"], pids["postgres"]):
        try:
            found += psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
    return found


def _events(path: Path, event: str) -> list[dict[str, Any]]:
    """The JSON events called ``event`` in a log file."""
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{") and f'"event":"{event}"' in line:
            found.append(json.loads(line))
    return found


def _replaced(home: Path, name: str, old_pid: int) -> int | None:
    """The new pid of child ``name`` once occ dev restarted it (``dev.pids`` rewritten)."""
    try:
        pids = json.loads((home / "run" / "dev.pids").read_text())
    except (OSError, ValueError):
        return None
    pid = pids.get(name)
    return pid if pid not in (None, old_pid) else None


def _kill_and_await_restart(home: Path, pids: dict[str, int], child: str, what: str) -> int:
    """SIGKILL ``child`` and wait for ``occ dev`` to start another; the new pid."""
    os.kill(pids[child], signal.SIGKILL)
    return wait_for(
        lambda: _replaced(home, child, pids[child]),
        timeout=STOP_DEADLINE_S,
        message=f"{what} to be restarted",
    )


def test_occ_dev_restarts_killed_children_and_keeps_serving(run_dev: Any, home: Path) -> None:
    dev = run_dev(home)
    ready = dev.wait_ready(READY_DEADLINE_S)
    api_url, key = ready["apiUrl"], Path(ready["adminKeyFile"]).read_text().strip()
    pids = json.loads((home / "run" / "dev.pids").read_text())
    processes = _processes_started_by(pids) + _live_descendants(pids)
    marker = home / "run" / "drivers.ready"
    assert marker.exists()

    # -- kill -9 the driver worker: restarted, and the next Namespace still becomes ready ------
    drivers = _kill_and_await_restart(home, pids, "drivers", "the driver worker")
    wait_for(
        lambda: marker.exists() and marker.read_text() == str(drivers),
        timeout=READY_DEADLINE_S,
        message="the restarted driver worker to be ready",
    )
    [restarted] = _events(home / "logs" / "dev.log", "dev.child-restarted")
    assert restarted["child"] == "drivers"
    assert restarted["exitStatus"] == -signal.SIGKILL
    assert restarted["pid"] == drivers
    code, document = _request("POST", f"{api_url}/v1/namespaces", key, {"name": "after-kill"})
    assert code == 201, document
    _wait_for_status(api_url, key, document["data"]["id"], "ready")

    # -- kill -9 the API: restarted on the same port, it answers again ------------------------
    api = _kill_and_await_restart(home, pids, "api", "the API")
    wait_for(
        lambda: _answers(f"{api_url}/v1/namespaces", key),
        timeout=READY_DEADLINE_S,
        message="the restarted API to answer",
    )
    restarts = _events(home / "logs" / "dev.log", "dev.child-restarted")
    assert [(event["child"], event["pid"]) for event in restarts] == [
        ("drivers", drivers),
        ("api", api),
    ]
    assert dev.process.poll() is None
    assert "occ: error" not in "".join(dev.stderr)

    # -- SIGTERM still stops everything, old and new processes alike ---------------------------
    now = json.loads((home / "run" / "dev.pids").read_text())
    processes += _processes_started_by(now) + _live_descendants(now)
    assert dev.stop(signal.SIGTERM, STOP_DEADLINE_S) == 0, "".join(dev.stderr)
    assert _still_running(processes) == []
    groups = {now[name] for name in ("redis", "api", "control", "drivers", "beat")}
    assert _group_members(groups | {pids["api"], pids["drivers"]}) == []
    assert _work_states(home / "pg").get("claimed", 0) == 0


def _answers(url: str, key: str) -> bool:
    try:
        code, _ = _request("GET", url, key)
    except (urllib.error.URLError, OSError):
        return False
    return code == 200


def test_occ_dev_stops_when_workers_keep_failing_their_start_up_checks(
    run_dev: Any, home: Path
) -> None:
    # the local driver's root is a file: every worker's preflight fails, each start exits 3
    home.mkdir(parents=True)
    (home / "local").write_text("not a directory\n")
    dev = run_dev(home)

    assert dev.process.wait(READY_DEADLINE_S) == 1
    dev.join_readers(10)
    stderr = [line for line in "".join(dev.stderr).splitlines() if line.strip()]
    assert stderr, "occ dev printed nothing"
    last = stderr[-1]
    assert last.startswith("occ: error: the "), stderr
    assert "process failed its start-up checks 3 times in a row" in last, last
    assert "exited with code 3" in last, last
    failed = "control" if "the control process" in last else "drivers"
    assert f"the {failed} process" in last, last
    assert str(home.resolve() / "logs" / f"{failed}.log") in last
    assert [line for line in dev.stdout if line.strip()] == []  # never ready

    startup_errors = _events(home / "logs" / f"{failed}.log", "worker.startup-error")
    assert len(startup_errors) >= 3, startup_errors
    assert all(event["error"] == "PermanentDriverError" for event in startup_errors)
    assert all("LOCAL_ROOT_UNUSABLE" in event["reason"] for event in startup_errors)
    assert _events(home / "logs" / "dev.log", "dev.child-restarted")

    # nothing occ dev started is left: no process mentions this home
    left = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            command = " ".join(process.info["cmdline"] or [])
            if str(home.resolve()) in command and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {command}")
        except psutil.NoSuchProcess:
            continue
    assert left == []
    assert not (home / "run" / "dev.pids").exists()
