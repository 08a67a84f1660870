"""Helpers for the ``local`` driver's integration tests: specs, probes and process checks.

Readiness is polled with deadlines (``wait_for``), never waited for with bare sleeps.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import ids
from tests.support import specs
from tests.support.processes import wait_for

READY_TIMEOUT = 20.0

GATEWAY_ARGUMENTS = [
    "--port",
    "{port}",
    "--revision-id",
    "{revision_id}",
    "--agent-id",
    "{agent_id}",
    "--generation",
    "{generation}",
    "--config",
    "{config}",
]
"""The stand-in gateway's arguments, with the placeholders the driver fills in."""

GATEWAY_TEMPLATE = [sys.executable, "-m", "occ.drivers.gateway", *GATEWAY_ARGUMENTS]
"""The stand-in gateway as a harness command template."""


def kill_every_gateway(root: Path) -> None:
    """SIGKILL every gateway started under ``root`` and wait until none runs."""
    driver = LocalComputeDriver(root)
    pids = set(driver.gateway_processes())
    for runtime in root.glob("agents/*/revisions/*/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int) and running(pid):
            pids.add(pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    wait_for(
        lambda: not any(running(pid) for pid in pids),
        timeout=10,
        message="leftover gateways to exit",
    )


def running(pid: int) -> bool:
    """Alive and not a zombie (an exited child whose status nobody collected yet)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def operation(work_id: str = "work_1", token: str = "token_1") -> base.Operation:
    return base.Operation(work_id=work_id, claim_token=token, abort=threading.Event())


def revision(
    agent_id: str,
    *,
    number: int = 1,
    harness: str = "openclaw",
    generation: int = 3,
    document: dict[str, Any] | None = None,
    credential: str | None = None,
) -> base.RevisionSpec:
    return specs.revision(
        namespace_id="ns_test",
        agent_id=agent_id,
        revision_id=ids.new("agent_revision"),
        revision_number=number,
        configuration_generation=generation,
        configuration_document=document or {"model": "m", "revision": number},
        harness_id=harness,
        service_principal_id="prn_test",
        credential=specs.credential(credential),
    )


def get(endpoint: str, path: str, *, token: str | None = None) -> tuple[int, Any]:
    """``GET`` ``path`` from a gateway (with a bearer ``token``): the status and JSON body."""
    host, _, port = endpoint.removeprefix("http://").partition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def until_ready(
    driver: LocalComputeDriver,
    spec: base.RevisionSpec,
    on: base.Operation | None = None,
) -> base.Ready:
    """Repeat ``prepare_revision`` until it is ``Ready`` (``Failed`` fails the test)."""
    current = on or operation()

    def ready() -> base.Ready | None:
        observation = driver.prepare_revision(current, spec)
        assert not isinstance(observation, base.Failed), observation
        return observation if isinstance(observation, base.Ready) else None

    result = wait_for(ready, timeout=READY_TIMEOUT, message=f"{spec.revision_id} ready")
    assert result is not None
    return result


def revision_dir(root: Path, spec: base.RevisionSpec) -> Path:
    return root / "agents" / spec.agent_id / "revisions" / spec.revision_id


def runtime(root: Path, spec: base.RevisionSpec) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        (revision_dir(root, spec) / "runtime.json").read_text(encoding="utf-8")
    )
    return document
