"""The Procfile under ``honcho start``: every process at once on a fresh database, a deploy, a
clean stop.

``release`` (migrate, bootstrap) runs beside the API, both workers and beat, which wait for it
instead of exiting. Then, as the administrator whose key the bootstrap printed: a Namespace, a
Configuration, a Secret and an Agent, deployed with the local Compute Driver until the
deployment is active and the gateway answers. Flower refuses a request without credentials.
SIGTERM to honcho stops every process it started, without SIGKILL.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from occ.drivers.compute.local import logfiles
from tests.e2e import admin_api
from tests.e2e.test_dev import _still_running
from tests.support import brokers, databases, gateways
from tests.support.processes import wait_for

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
BROKER_DATABASE = 9
"""The test Redis database of this suite (see ``tests.support.brokers``)."""
READY_DEADLINE_S = 60.0
DEPLOY_DEADLINE_S = 45.0
STOP_DEADLINE_S = 30.0
FLOWER_AUTH = "admin:flower-e2e-password"
PROCESS_TYPES = ("release", "web", "control", "worker", "beat", "flower")


def _free_base_port() -> int:
    """A port P such that P + 100 * i is free for each process type (honcho's numbering)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base: int = probe.getsockname()[1]
        if base + 100 * len(PROCESS_TYPES) >= 65535:
            continue
        if all(_is_free(base + 100 * index) for index in range(len(PROCESS_TYPES))):
            return base
    raise AssertionError("no free run of ports for honcho")


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port_of(base: int, process_type: str) -> int:
    return base + 100 * PROCESS_TYPES.index(process_type)


def _status(url: str, headers: dict[str, str] | None = None) -> int | None:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=3):
            return 200
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return None


@pytest.fixture
def fresh_database() -> Iterator[databases.DatabaseUrls]:
    with databases.unmigrated(f"occ_e2e_procfile_{os.getpid()}") as urls:
        yield urls


@pytest.fixture
def broker_url() -> Iterator[str]:
    with brokers.flushed(BROKER_DATABASE) as url:
        yield url


class Honcho:
    """``honcho start`` on the repository's Procfile, its output in a file."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.log = directory / "honcho.log"
        honcho = shutil.which("honcho", path=str(Path(sys.executable).parent))
        assert honcho is not None, "honcho is not installed (pip install -e '.[dev]')"
        with self.log.open("wb") as output:
            self.popen = subprocess.Popen(
                [honcho, "start", "-f", str(ROOT / "Procfile"), "-e", str(directory / ".env")],
                cwd=directory,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.seen: dict[int, psutil.Process] = {}

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def note_processes(self) -> None:
        """Remember every process below honcho now (to check they are all gone at the end),
        but the gateways and their log writers: an Agent's runtime runs in a session of its own
        and outlives them."""
        for process in psutil.Process(self.popen.pid).children(recursive=True):
            try:
                command = " ".join(process.cmdline())
                if "occ.drivers.gateway" not in command and logfiles.__file__ not in command:
                    self.seen[process.pid] = process
            except psutil.NoSuchProcess:
                continue

    def still_running(self) -> list[str]:
        return _still_running(list(self.seen.values()))

    def kill(self) -> None:
        for process in [psutil.Process(self.popen.pid), *self.seen.values()]:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                continue
        self.popen.wait(10)


@pytest.fixture
def honcho(
    tmp_path: Path, fresh_database: databases.DatabaseUrls, broker_url: str
) -> Iterator[tuple[Honcho, int]]:
    base = _free_base_port()
    local_root = tmp_path / "local"
    settings = {
        "PORT": str(base),
        "OCC_ENV": "development",
        "OCC_DATABASE_URL": fresh_database.app,
        "OCC_MIGRATION_DATABASE_URL": fresh_database.owner,
        "OCC_BROKER_URL": broker_url,
        "OCC_COMPUTE_DRIVER": "local",
        "OCC_LOCAL_ROOT": str(local_root),
        "OCC_API_KEY_PEPPER": "procfile-e2e-pepper",
        "OCC_SECRET_KEY": "procfile-e2e-secret-key",
        "FLOWER_BASIC_AUTH": FLOWER_AUTH,
    }
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCC_", "FLOWER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', os.defpath)}"
    started = Honcho(tmp_path, env)
    try:
        yield started, base
    finally:
        if started.alive():
            started.note_processes()
            started.kill()
        gateways.stop_all(local_root)


def _admin_key(output: str) -> str | None:
    """The key ``occ bootstrap --if-missing`` printed in release's output."""
    for line in output.splitlines():
        name, _, printed = line.partition("|")
        if "release" in name and printed.strip().startswith("{"):
            document = json.loads(printed)
            if "key" in document:
                return str(document["key"])
    return None


def test_honcho_starts_the_procfile_deploys_an_agent_and_stops_cleanly(
    honcho: tuple[Honcho, int],
) -> None:
    runner, base = honcho
    api_url = f"http://127.0.0.1:{_port_of(base, 'web')}"
    flower_url = f"http://127.0.0.1:{_port_of(base, 'flower')}"
    started = time.monotonic()

    # -- everything starts beside release, waiting for it ---------------------------------------
    wait_for(
        lambda: _status(f"{api_url}/healthz") == 200 or not runner.alive(),
        timeout=READY_DEADLINE_S,
        interval=0.2,
        message="the API to answer /healthz",
    )
    assert runner.alive(), runner.text()[-4000:]
    ready_s = time.monotonic() - started
    key = wait_for(lambda: _admin_key(runner.text()), timeout=10, message="the admin key")
    assert key.startswith("occ_")

    # -- Flower asks for credentials ------------------------------------------------------------
    wait_for(
        lambda: _status(flower_url) is not None,
        timeout=READY_DEADLINE_S,
        interval=0.2,
        message="Flower to listen",
    )
    assert _status(flower_url) == 401
    user, _, password = FLOWER_AUTH.partition(":")
    wrong = {"Authorization": "Basic " + _basic(user, "not-the-password")}
    assert _status(flower_url, wrong) == 401
    assert _status(flower_url, {"Authorization": "Basic " + _basic(user, password)}) == 200

    # -- a deployed Agent, through the API, both workers and beat -------------------------------
    api = admin_api.Api(api_url, key)
    namespace_id = admin_api.ready_namespace(api, "procfile")
    [agent_id] = admin_api.embedded_agents(api, namespace_id, ["procfile-agent"])
    agent_path = f"/v1/namespaces/{namespace_id}/agents/{agent_id}"
    deployment = api.call("POST", f"{agent_path}/deploy")
    deployment_path = f"{agent_path}/deployments/{deployment['deploymentId']}"

    def active() -> bool:
        state = api.call("GET", deployment_path)["state"]
        assert state in ("pending", "active"), state
        return bool(state == "active")

    wait_for(active, timeout=DEPLOY_DEADLINE_S, interval=0.2, message="the deployment to be active")
    endpoint = api.call("GET", agent_path)["endpoint"]
    assert endpoint
    wait_for(
        lambda: _status(f"{endpoint}/healthz") == 200,
        timeout=DEPLOY_DEADLINE_S,
        interval=0.2,
        message="the gateway to answer",
    )

    # -- SIGTERM: every process honcho started is gone, none killed ----------------------------
    runner.note_processes()
    assert {name for name in PROCESS_TYPES if f"{name}.1 started" not in runner.text()} == set()
    os.kill(runner.popen.pid, signal.SIGTERM)
    runner.popen.wait(STOP_DEADLINE_S)
    wait_for(lambda: runner.still_running() == [], timeout=10, message="every process to exit")
    output = runner.text()
    before_stop, _, _ = output.partition("SIGTERM received")
    assert "stopped (rc=" not in before_stop, "a process exited before the stop"
    assert "SIGKILL" not in output, output[-4000:]
    assert key not in output.replace(key, "", 1), "the key is printed once, by the bootstrap"
    assert not re.search(r"startup-error|Traceback", output), output[-4000:]
    assert ready_s < READY_DEADLINE_S


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()
