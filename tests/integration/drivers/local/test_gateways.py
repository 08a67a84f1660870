"""Gateway processes of the ``local`` driver: their environment, finding them, ending them,
and runtimes that never become ready.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import ids
from tests.integration.drivers.local import support
from tests.support.processes import wait_for


def test_the_gateway_environment_holds_nothing_of_the_worker(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCC_SECRET_KEY", "worker-secret-never-in-a-gateway")
    driver = LocalComputeDriver(root)
    revision = support.revision(ids.new("agent"))
    support.until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    environment = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"worker-secret-never-in-a-gateway" not in environment
    assert b"OCC_SECRET_KEY" not in environment
    assert not list(root.rglob("*secret*"))


def test_a_recycled_pid_is_not_taken_for_the_gateway(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = support.revision(ids.new("agent"))
    support.until_ready(driver, revision)
    gateway = driver.revision_process(revision.agent_id, revision.revision_id)
    runtime_path = support.revision_dir(root, revision) / "runtime.json"
    runtime = support.runtime(root, revision)
    runtime["pid"] = os.getpid()  # a live process that is not this revision's gateway
    runtime_path.write_text(json.dumps(runtime), encoding="utf-8")
    # The recorded pid is refused; the marked gateway is an orphan: replaced, not adopted.
    observation = driver.prepare_revision(support.operation(), revision)
    assert isinstance(observation, base.Pending | base.Ready)
    assert gateway is not None and not support.running(gateway)
    assert support.runtime(root, revision)["pid"] not in (gateway, os.getpid())
    support.until_ready(driver, revision)
    driver.retire_revision(support.operation(), revision)


def test_stop_escalates_to_sigkill(root: Path) -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
        "{revision_id}",
    ]
    driver = LocalComputeDriver(root, harness_commands={"stubborn": stubborn}, stop_timeout_s=0.5)
    revision = support.revision(ids.new("agent"), harness="stubborn")
    assert driver.prepare_revision(support.operation(), revision) == base.Pending(
        "REVISION_INCOMPLETE"
    )
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None
    # Wait until the interpreter ignores SIGTERM (its handler is installed).
    wait_for(lambda: _sigterm_ignored(pid), timeout=10, message="SIGTERM ignored")
    started = time.monotonic()
    driver.stop_revision(support.operation(), revision)
    assert not support.running(pid)
    assert time.monotonic() - started < 8


def _sigterm_ignored(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


# -- runtimes that do not become ready -------------------------------------------------------


def test_an_unhealthy_gateway_stays_pending(root: Path) -> None:
    driver = LocalComputeDriver(
        root, harness_commands={"sick": [*support.GATEWAY_TEMPLATE, "--unhealthy"]}
    )
    revision = support.revision(ids.new("agent"), harness="sick")
    assert driver.prepare_revision(support.operation(), revision) == base.Pending(
        "REVISION_INCOMPLETE"
    )
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    endpoint = f"http://127.0.0.1:{support.runtime(root, revision)['port']}"

    def answers_unhealthy() -> bool:
        with contextlib.suppress(OSError):
            return support.get(endpoint, "/healthz")[0] == 503
        return False

    wait_for(answers_unhealthy, timeout=support.READY_TIMEOUT, message="the gateway to answer 503")
    for _ in range(3):
        assert driver.prepare_revision(support.operation(), revision) == base.Pending(
            "REVISION_INCOMPLETE"
        )
    assert driver.revision_process(revision.agent_id, revision.revision_id) == pid
    driver.retire_revision(support.operation(), revision)


def test_a_gateway_that_keeps_exiting_fails_after_one_restart(root: Path) -> None:
    crashing = [sys.executable, "-c", "import sys; sys.exit(3)", "{revision_id}"]
    driver = LocalComputeDriver(root, harness_commands={"crash": crashing})
    revision = support.revision(ids.new("agent"), harness="crash")

    def exited() -> bool:
        return driver.revision_process(revision.agent_id, revision.revision_id) is None

    assert driver.prepare_revision(support.operation(), revision) == base.Pending(
        "REVISION_INCOMPLETE"
    )
    assert support.runtime(root, revision)["restarts"] == 0
    wait_for(exited, timeout=10, message="the first start to exit")
    assert driver.prepare_revision(support.operation(), revision) == base.Pending(
        "REVISION_INCOMPLETE"
    )
    assert support.runtime(root, revision)["restarts"] == 1
    wait_for(exited, timeout=10, message="the restart to exit")
    failed = driver.prepare_revision(support.operation(), revision)
    assert isinstance(failed, base.Failed)
    assert (failed.code, failed.permanent) == ("RUNTIME_STARTUP_FAILED", False)
    # The retry starts from scratch.
    assert driver.prepare_revision(support.operation(), revision) == base.Pending(
        "REVISION_INCOMPLETE"
    )
    assert support.runtime(root, revision)["restarts"] == 0
    wait_for(exited, timeout=10, message="the fresh start to exit")
    driver.retire_revision(support.operation(), revision)


def test_a_command_that_cannot_run_fails_permanently(root: Path) -> None:
    driver = LocalComputeDriver(
        root, harness_commands={"missing": [str(root / "no-such-harness"), "{port}"]}
    )
    revision = support.revision(ids.new("agent"), harness="missing")
    failed = driver.prepare_revision(support.operation(), revision)
    assert isinstance(failed, base.Failed)
    assert (failed.code, failed.permanent) == ("RUNTIME_STARTUP_FAILED", True)
    driver.retire_revision(support.operation(), revision)
