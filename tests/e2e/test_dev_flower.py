"""``occ dev --flower``: Flower on loopback behind a generated password, named by the ready line,
showing the work by its Namespace's name, and stopped with the rest.

Runs the real command (embedded PostgreSQL and Redis, the fleet and Flower) as a subprocess.
"""

from __future__ import annotations

import base64
import json
import signal
import socket
import stat
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.e2e import dev_process
from tests.support.processes import wait_for

pytestmark = pytest.mark.timeout(420)

READY_DEADLINE_S = 150.0


@pytest.fixture
def started() -> Iterator[list[dev_process.DevProcess]]:
    running: list[dev_process.DevProcess] = []
    yield running
    dev_process.stop_all(running)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str, credential: str | None = None) -> tuple[int, bytes]:
    headers = {}
    if credential is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(credential.encode()).decode()
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=10
        ) as answer:
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, b""
    except urllib.error.URLError:
        return 0, b""  # nothing listens


def _create_namespace(api_url: str, key: str, name: str) -> str:
    request = urllib.request.Request(
        f"{api_url}/v1/namespaces",
        data=json.dumps({"name": name}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        namespace_id: str = json.load(answer)["data"]["id"]
    return namespace_id


def test_occ_dev_runs_flower_on_loopback_behind_a_generated_password(
    started: list[dev_process.DevProcess], home: Path
) -> None:
    port = _free_port()
    dev = dev_process.start(home, arguments=("--flower", "--flower-port", str(port)))
    started.append(dev)
    ready = dev.wait_ready(READY_DEADLINE_S)

    flower_url = ready["flowerUrl"]
    assert flower_url == f"http://127.0.0.1:{port}"
    auth_file = Path(ready["flowerAuthFile"])
    assert auth_file == home.resolve() / "flower.auth"
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    credential = auth_file.read_text().strip()
    user, _, password = credential.partition(":")
    assert user == "occ" and len(password) >= 16
    assert password not in "".join(dev.stdout) + "".join(dev.stderr)

    # refused without the credential, or with a wrong one; served with it
    assert _get(f"{flower_url}/")[0] == 401
    assert _get(f"{flower_url}/api/workers")[0] == 401
    assert _get(f"{flower_url}/", f"{user}:wrong-{password}")[0] == 401
    status, page = _get(f"{flower_url}/", credential)
    assert status == 200 and b"Flower" in page

    # bound to loopback only, and the password is in no command line
    pids = json.loads((home / "run" / "dev.pids").read_text())
    flower = psutil.Process(pids["flower"])
    listening = {c.laddr for c in flower.net_connections() if c.status == psutil.CONN_LISTEN}
    for child in flower.children(recursive=True):
        listening |= {c.laddr for c in child.net_connections() if c.status == psutil.CONN_LISTEN}
    assert {(address.ip, address.port) for address in listening} == {("127.0.0.1", port)}
    # (a zombie's or a vanished process's command line reads as None: it holds nothing)
    command_lines = [p.info["cmdline"] or [] for p in psutil.process_iter(["cmdline"])]
    assert all(password not in " ".join(line) for line in command_lines)

    # the work shows on Flower with its Namespace's name
    key = Path(ready["adminKeyFile"]).read_text().strip()
    namespace_id = _create_namespace(ready["apiUrl"], key, "flower-e2e")

    def shown() -> dict[str, Any] | None:
        status, body = _get(f"{flower_url}/api/tasks?taskname=occ.run_work", credential)
        assert status == 200
        tasks: dict[str, dict[str, Any]] = json.loads(body)
        return next(
            (task for task in tasks.values() if namespace_id in str(task.get("kwargs"))), None
        )

    task = wait_for(shown, timeout=60, message="Flower to show the Namespace's work")
    assert "'namespace': 'flower-e2e'" in str(task["kwargs"])
    assert "<dispatch token>" in str(task["args"])

    assert dev.stop(signal.SIGINT, dev_process.STOP_DEADLINE_S) == 0, "".join(dev.stderr)
    assert not flower.is_running() or flower.status() == psutil.STATUS_ZOMBIE
    assert _get(f"{flower_url}/healthcheck")[0] != 200


def test_a_taken_flower_port_stops_occ_dev_before_anything_starts(
    started: list[dev_process.DevProcess], home: Path
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        dev = dev_process.start(home, arguments=("--flower", "--flower-port", str(port)))
        started.append(dev)
        assert dev.process.wait(60) == 1
    dev.join_readers(10)
    assert f"Flower cannot listen on 127.0.0.1:{port}" in "".join(dev.stderr)
    assert dev.stdout == []
    assert not (home / "pg").exists()  # nothing started
