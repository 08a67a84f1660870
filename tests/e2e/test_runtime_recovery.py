"""``occ dev`` heals what dies while it runs and what died while it was stopped.

With a short maintenance interval: a gateway killed with SIGKILL answers ``/healthz`` again
within the interval and its Agent's ``runtimeStatus`` is seen ``degraded`` and then ``ready``
again; after a stop and a start with three running Agents, every endpoint answers within the
interval (beat seeds an observation of every active revision when the fleet starts).
"""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.e2e import admin_api, dev_process
from tests.e2e.test_dev import READY_DEADLINE_S, STOP_DEADLINE_S
from tests.support.processes import wait_for

pytestmark = pytest.mark.timeout(300)

INTERVAL_MS = 3_000
"""The maintenance interval the fleet runs with (OCC_MAINTENANCE_INTERVAL_MS)."""
SLACK_S = 6.0
"""What a pass may take on top of the interval on a loaded two-core machine (claim, start of a
gateway process, its first health check)."""
DEPLOY_DEADLINE_S = 60.0


@pytest.fixture
def run_dev(home: Path) -> Iterator[Any]:
    started: list[dev_process.DevProcess] = []

    def run() -> dev_process.DevProcess:
        dev = dev_process.start(home, {"OCC_MAINTENANCE_INTERVAL_MS": str(INTERVAL_MS)})
        started.append(dev)
        return dev

    yield run
    dev_process.stop_all(started)


def _admin_api(ready: dict[str, Any]) -> admin_api.Api:
    """The administrator's API of a running ``occ dev`` (what it printed once ready)."""
    return admin_api.Api(ready["apiUrl"], Path(ready["adminKeyFile"]).read_text().strip())


def _running_agents(api: admin_api.Api, count: int) -> tuple[str, list[str]]:
    """A ready Namespace with ``count`` Agents deployed (their service principals granted what a
    deploy needs); the Namespace id and the Agent ids."""
    namespace_id = admin_api.ready_namespace(api, "runtime")
    names = [f"agent-{number}" for number in range(count)]
    agent_ids = admin_api.embedded_agents(api, namespace_id, names)
    for agent_id in agent_ids:
        api.call("POST", f"/v1/namespaces/{namespace_id}/agents/{agent_id}/deploy")
    for agent_id in agent_ids:

        def ready(agent_id: str = agent_id) -> bool:
            return bool(_agent(api, namespace_id, agent_id)["runtimeStatus"] == "ready")

        wait_for(
            ready,
            timeout=DEPLOY_DEADLINE_S,
            interval=0.2,
            message=f"Agent {agent_id} to run",
        )
    return namespace_id, agent_ids


def _agent(api: admin_api.Api, namespace_id: str, agent_id: str) -> dict[str, Any]:
    data: dict[str, Any] = api.call("GET", f"/v1/namespaces/{namespace_id}/agents/{agent_id}")
    return data


def _healthy(endpoint: str | None) -> bool:
    if endpoint is None:
        return False
    try:
        with urllib.request.urlopen(f"{endpoint}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _gateway_pid(revision_id: str) -> int:
    """The pid of the stand-in gateway serving this revision."""
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = process.info["cmdline"] or []
        if "occ.drivers.gateway" in " ".join(command) and revision_id in command:
            return int(process.info["pid"])
    raise AssertionError(f"no gateway process serves {revision_id}")


def test_a_killed_gateway_is_back_within_one_interval(run_dev: Any) -> None:
    dev = run_dev()
    api = _admin_api(dev.wait_ready(READY_DEADLINE_S))
    namespace_id, [agent_id] = _running_agents(api, 1)
    before = _agent(api, namespace_id, agent_id)
    assert _healthy(before["endpoint"])

    os.kill(_gateway_pid(before["activeRevisionId"]), signal.SIGKILL)
    killed_at = time.monotonic()
    statuses: list[str] = []
    healthy_after_s: float | None = None
    deadline = killed_at + INTERVAL_MS / 1000 + SLACK_S + 10
    while time.monotonic() < deadline:
        agent = _agent(api, namespace_id, agent_id)
        if not statuses or statuses[-1] != agent["runtimeStatus"]:
            statuses.append(agent["runtimeStatus"])
        if healthy_after_s is None and _healthy(agent["endpoint"]):
            healthy_after_s = time.monotonic() - killed_at
        if healthy_after_s is not None and statuses[-1] == "ready" and "degraded" in statuses:
            break
        time.sleep(0.05)
    print(f"runtimeStatus after SIGKILL: {statuses}; /healthz again after {healthy_after_s} s")
    assert "degraded" in statuses, statuses
    assert statuses[statuses.index("degraded") :][-1] == "ready", statuses
    assert healthy_after_s is not None and healthy_after_s <= INTERVAL_MS / 1000 + SLACK_S, (
        healthy_after_s
    )
    after = _agent(api, namespace_id, agent_id)
    assert after["activeRevisionId"] == before["activeRevisionId"]
    assert after["runtimeObservedAt"] > before["runtimeObservedAt"]
    assert dev.stop(signal.SIGINT, STOP_DEADLINE_S) == 0, "".join(dev.stderr)


def test_running_agents_answer_within_one_interval_after_a_restart(run_dev: Any) -> None:
    dev = run_dev()
    api = _admin_api(dev.wait_ready(READY_DEADLINE_S))
    namespace_id, agent_ids = _running_agents(api, 3)
    endpoints = [_agent(api, namespace_id, a)["endpoint"] for a in agent_ids]
    assert dev.stop(signal.SIGINT, STOP_DEADLINE_S) == 0, "".join(dev.stderr)
    # the gateways went down with the fleet: what answers later was started again
    assert not any(_healthy(endpoint) for endpoint in endpoints), endpoints

    again = run_dev()
    ready_again = again.wait_ready(READY_DEADLINE_S)
    started_at = time.monotonic()
    api = _admin_api(ready_again)

    def all_answer() -> bool:
        return all(_healthy(_agent(api, namespace_id, a)["endpoint"]) for a in agent_ids)

    wait_for(
        all_answer,
        timeout=INTERVAL_MS / 1000 + SLACK_S,
        interval=0.1,
        message="every Agent's endpoint to answer after the restart",
    )
    answered_s = time.monotonic() - started_at
    print(f"three endpoints answered {answered_s:.1f} s after the fleet was ready again")
    statuses = {_agent(api, namespace_id, a)["runtimeStatus"] for a in agent_ids}
    assert statuses <= {"ready", "degraded"}, statuses
    assert again.stop(signal.SIGINT, STOP_DEADLINE_S) == 0, "".join(again.stderr)
