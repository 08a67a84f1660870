"""The ``LocalComputeDriver``'s contract with real gateway processes under a temporary root.

Preparation and readiness, activation, stop, retirement, abort and Agent deletion; the
``root`` fixture kills whatever gateway is left, so none outlives its test.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver, logfiles
from occ.foundation import ids
from tests.integration.drivers.local import support
from tests.support.processes import wait_for

# -- preparation and readiness -------------------------------------------------------------


def test_prepare_is_pending_then_ready_and_the_gateway_serves_the_revision(root: Path) -> None:
    driver = LocalComputeDriver(root)
    document = {"model": "claude", "tools": ["search"], "limits": {"tokens": 1000}}
    revision = support.revision(ids.new("agent"), generation=7, document=document)

    first = driver.prepare_revision(support.operation(), revision)
    assert first == base.Pending("REVISION_INCOMPLETE")
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None and support.running(pid)

    ready = support.until_ready(driver, revision)
    endpoint = ready.details["endpoint"]
    runtime = support.runtime(root, revision)
    assert endpoint == f"http://127.0.0.1:{runtime['port']}"
    assert runtime["pid"] == pid
    assert {"startedAt", "command"} <= set(runtime)
    assert revision.revision_id in runtime["command"]

    status, health = support.get(endpoint, "/healthz")
    assert status == 200
    assert health == {
        "status": "ok",
        "revisionId": revision.revision_id,
        "agentId": revision.agent_id,
        "configurationGeneration": 7,
        "credentialFingerprint": None,  # no credential delivered
        "warnings": [],
    }
    # without a credential of its own the gateway serves no configuration to anyone
    assert support.get(endpoint, "/config") == (404, {"status": "not_found"})
    directory = support.revision_dir(root, revision)
    assert json.loads((directory / "configuration.json").read_text()) == document
    assert (directory / "gateway.log").exists()

    # Ready again without a new process; every pass was journalled with its claim token.
    assert driver.prepare_revision(support.operation(), revision) == ready
    assert driver.revision_process(revision.agent_id, revision.revision_id) == pid
    prepares = [e for e in driver.effects() if e["op"] == "prepare_revision"]
    assert {e["phase"] for e in prepares} == {"started", "ended"}
    assert all(
        e["token"] == "token_1" and e["revisionId"] == revision.revision_id for e in prepares
    )
    driver.retire_revision(support.operation(), revision)


# -- activation, replacement, retirement ----------------------------------------------------


def test_activate_a_second_revision_and_retire_the_first(root: Path) -> None:
    driver = LocalComputeDriver(root)
    agent_id = ids.new("agent")
    first, second = support.revision(agent_id, number=1), support.revision(agent_id, number=2)
    assert driver.active_endpoint(agent_id) is None

    endpoint_1 = support.until_ready(driver, first).details["endpoint"]
    activation = driver.activate_revision(support.operation(), first)
    assert activation == base.Activation(endpoint_1)
    assert driver.activate_revision(support.operation(), first) == activation  # idempotent
    assert driver.active_endpoint(agent_id) == endpoint_1
    assert json.loads((root / "agents" / agent_id / "active.json").read_text()) == {
        "revisionId": first.revision_id,
        "endpoint": endpoint_1,
    }
    pid_1 = driver.revision_process(agent_id, first.revision_id)
    assert pid_1 is not None

    endpoint_2 = support.until_ready(driver, second).details["endpoint"]
    assert endpoint_2 != endpoint_1
    assert driver.activate_revision(support.operation(), second) == base.Activation(endpoint_2)
    assert driver.active_endpoint(agent_id) == endpoint_2
    assert driver.active_endpoint(agent_id, second.revision_id) == endpoint_2
    assert driver.active_endpoint(agent_id, first.revision_id) is None

    driver.retire_revision(support.operation(), first)
    assert not support.running(pid_1)
    assert driver.revision_process(agent_id, first.revision_id) is None
    assert not support.revision_dir(root, first).exists()
    assert driver.active_endpoint(agent_id) == endpoint_2  # the pointer names the second
    assert support.get(endpoint_2, "/healthz")[1]["revisionId"] == second.revision_id
    driver.retire_revision(support.operation(), first)  # idempotent

    driver.retire_revision(support.operation(), second)
    assert driver.active_endpoint(agent_id) is None  # retiring the active one drops it
    assert driver.gateway_processes() == []
    ops = [(e["op"], e["phase"]) for e in driver.effects()]
    for op in ("prepare_revision", "activate_revision", "retire_revision"):
        assert ops.count((op, "started")) == ops.count((op, "ended")) > 0


def test_activation_needs_a_running_gateway(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = support.revision(ids.new("agent"))
    with pytest.raises(base.TransientDriverError) as raised:
        driver.activate_revision(support.operation(), revision)
    assert raised.value.code == "REVISION_NOT_RUNNING"
    assert driver.active_endpoint(revision.agent_id) is None


def test_a_new_driver_finds_the_running_gateway_again(root: Path) -> None:
    agent_id = ids.new("agent")
    revision = support.revision(agent_id)
    before = LocalComputeDriver(root)
    endpoint = support.until_ready(before, revision).details["endpoint"]
    before.activate_revision(support.operation(), revision)
    pid = before.revision_process(agent_id, revision.revision_id)
    assert pid is not None

    after = LocalComputeDriver(root)  # a restarted worker: nothing shared but the files
    assert after.revision_process(agent_id, revision.revision_id) == pid
    assert after.active_endpoint(agent_id) == endpoint
    assert after.prepare_revision(support.operation("work_2", "token_2"), revision) == base.Ready(
        {"endpoint": endpoint}
    )
    assert after.revision_process(agent_id, revision.revision_id) == pid
    assert support.runtime(root, revision)["pid"] == pid
    assert after.gateway_processes() == [pid]
    after.retire_revision(support.operation("work_2", "token_2"), revision)
    assert not support.running(pid)


# -- stop ----------------------------------------------------------------------------------


def test_stop_keeps_the_files_and_a_later_prepare_starts_again(root: Path) -> None:
    # Through the `occ gateway` command, so its clean SIGTERM exit is seen in the log.
    command = [sys.executable, "-c", "from occ.cli import main; main()", "gateway"]
    command += support.GATEWAY_ARGUMENTS
    driver = LocalComputeDriver(root, harness_commands={"cli": command})
    revision = support.revision(ids.new("agent"), harness="cli")
    endpoint = support.until_ready(driver, revision).details["endpoint"]
    driver.activate_revision(support.operation(), revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None

    driver.stop_revision(support.operation(), revision)
    assert not support.running(pid)
    assert driver.revision_process(revision.agent_id, revision.revision_id) is None
    directory = support.revision_dir(root, revision)
    assert (directory / "configuration.json").exists()
    runtime = support.runtime(root, revision)
    assert runtime["pid"] is None and "stoppedAt" in runtime
    log = directory / "gateway.log"  # written by the log's writer, which drains the pipe
    wait_for(
        lambda: '"event":"gateway.stopped"' in log.read_text(encoding="utf-8"),
        timeout=10,
        message="the gateway's last line in its log",
    )
    assert driver.active_endpoint(revision.agent_id) == endpoint  # the reconciler's business
    driver.stop_revision(support.operation(), revision)  # idempotent when nothing runs

    again = support.until_ready(driver, revision).details["endpoint"]
    assert driver.revision_process(revision.agent_id, revision.revision_id) not in (None, pid)
    assert again == endpoint  # the restarted gateway has its port back: a stable endpoint
    driver.retire_revision(support.operation(), revision)


def test_a_restarted_gateway_whose_port_is_taken_moves_and_says_so(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = support.revision(ids.new("agent"))
    endpoint = support.until_ready(driver, revision).details["endpoint"]
    driver.activate_revision(support.operation(), revision)
    port = support.runtime(root, revision)["port"]
    driver.stop_revision(support.operation(), revision)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        moved = support.until_ready(driver, revision).details["endpoint"]
    assert moved != endpoint
    assert support.runtime(root, revision)["port"] != port
    log = (support.revision_dir(root, revision) / "gateway.log").read_text(encoding="utf-8")
    [line] = [json.loads(text) for text in log.splitlines() if "gateway.port_taken" in text]
    assert (line["port"], f"http://127.0.0.1:{line['newPort']}") == (port, moved)
    assert f"port {port} of this revision is taken" in line["message"]
    driver.retire_revision(support.operation(), revision)


# -- abort ---------------------------------------------------------------------------------


def test_an_aborted_operation_does_nothing(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = support.revision(ids.new("agent"))
    operation = support.operation()
    operation.abort.set()
    with pytest.raises(base.Aborted):
        driver.prepare_revision(operation, revision)
    assert not support.revision_dir(root, revision).exists()
    assert driver.gateway_processes() == []


def test_an_abort_during_the_effect_stops_it(root: Path) -> None:
    driver = LocalComputeDriver(root, effect_delay_s=30)
    revision = support.revision(ids.new("agent"))
    operation = support.operation()
    timer = threading.Timer(0.2, operation.abort.set)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(base.Aborted):
            driver.prepare_revision(operation, revision)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10
    assert driver.gateway_processes() == []
    # An effect aborted during its simulated duration ends at once, journalled as aborted.
    assert [(e["op"], e["phase"], e.get("outcome")) for e in driver.effects()] == [
        ("prepare_revision", "started", None),
        ("prepare_revision", "ended", "Aborted"),
    ]
    assert not support.revision_dir(root, revision).exists()


# -- Agent deletion ------------------------------------------------------------------------


def test_delete_agent_credentials_removes_the_agent_directory(root: Path) -> None:
    driver = LocalComputeDriver(root)
    agent_id = ids.new("agent")
    other_agent = support.revision(ids.new("agent"))
    first, second = support.revision(agent_id, number=1), support.revision(agent_id, number=2)
    for revision in (first, second, other_agent):
        support.until_ready(driver, revision)
    driver.activate_revision(support.operation(), second)
    driver.retire_revision(support.operation(), first)
    leftover = driver.revision_process(agent_id, second.revision_id)  # never retired

    driver.delete_agent_credentials(support.operation(), "ns_test", agent_id)
    assert not (root / "agents" / agent_id).exists()
    assert leftover is not None and not support.running(leftover)
    assert driver.active_endpoint(agent_id) is None
    driver.delete_agent_credentials(support.operation(), "ns_test", agent_id)  # idempotent
    driver.retire_revision(support.operation(), second)  # a repeated retirement recreates nothing
    driver.stop_revision(support.operation(), second)
    assert not (root / "agents" / agent_id).exists()
    # Another Agent is untouched.
    assert driver.revision_process(other_agent.agent_id, other_agent.revision_id) is not None
    driver.retire_revision(support.operation(), other_agent)


def test_maintenance_interval_is_off_unless_configured(root: Path) -> None:
    assert LocalComputeDriver(root).capabilities == base.Capabilities(
        activation_order=base.ActivationOrder.AFTER_COMMIT
    )
    assert (
        LocalComputeDriver(root, maintenance_interval_s=2).capabilities.maintenance_interval_s == 2
    )
    assert isinstance(LocalComputeDriver(root), base.ComputeDriver)


def test_every_revision_has_the_driver_capabilities(root: Path) -> None:
    driver = LocalComputeDriver(root, maintenance_interval_s=5)
    spec = support.revision(ids.new("agent"))
    assert driver.revision_capabilities(spec) is driver.capabilities
    assert driver.revision_capabilities(spec).maintenance_interval_s == 5


# -- observation ---------------------------------------------------------------------------


def test_a_running_gateway_that_fails_its_health_check_is_not_observed_healthy(
    root: Path,
) -> None:
    driver = LocalComputeDriver(root)
    healthy = support.revision(ids.new("agent"))
    sick = support.revision(ids.new("agent"), document={"standIn": {"healthy": False}})
    support.until_ready(driver, healthy)
    assert driver.prepare_revision(support.operation(), sick) == base.Pending("REVISION_INCOMPLETE")
    pid = driver.revision_process(sick.agent_id, sick.revision_id)
    assert pid is not None and support.running(pid)  # its process runs: the driver's readiness

    observed = driver.observe_revisions([healthy, sick])

    assert observed[healthy.revision_id].healthy
    assert observed[sick.revision_id] == base.Observed(False, code="GATEWAY_UNHEALTHY")


# -- gateway logs ----------------------------------------------------------------------------

CHATTY = (
    "import os, sys\n"
    "for n in range(3000): print(f'chatty {n:06d} '.ljust(99, 'x'))\n"
    "sys.stdout.flush()\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'occ.drivers.gateway', *sys.argv[1:]])\n"
)
"""A harness that writes 300 kB before it becomes the stand-in gateway."""


def _log_writers(directory: Path) -> list[int]:
    """Processes whose command line names the revision's ``gateway.log``: its writer."""
    log = str(directory / "gateway.log").encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and log in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if support.running(pid)]


def test_a_gateways_output_is_rotated_by_size_and_its_writer_ends_with_it(root: Path) -> None:
    rotation = logfiles.Rotation(max_bytes=20_000, backups=2)
    template = [sys.executable, "-c", CHATTY, *support.GATEWAY_ARGUMENTS]
    driver = LocalComputeDriver(root, harness_commands={"chatty": template}, rotation=rotation)
    revision = support.revision(ids.new("agent"), harness="chatty")
    support.until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    directory = support.revision_dir(root, revision)
    log = directory / "gateway.log"
    wait_for(
        lambda: b'"event":"gateway.started"' in log.read_bytes(),
        timeout=10,
        message="the gateway's own first line in its log",
    )

    files = logfiles.files(log, rotation)
    assert [file.name for file in files] == ["gateway.log.2", "gateway.log.1", "gateway.log"]
    assert sum(file.stat().st_size for file in files) <= 3 * rotation.max_bytes
    lines = b"".join(file.read_bytes() for file in files).splitlines()
    chatty = [line for line in lines if line.startswith(b"chatty ")]
    assert chatty[-1].startswith(b"chatty 002999 ")  # the newest lines, whole and in order
    first = int(chatty[0].split()[1])
    assert [int(line.split()[1]) for line in chatty] == list(range(first, 3000))
    assert b'"event":"gateway.started"' in log.read_bytes()  # the newest at the log's name
    [writer] = _log_writers(directory)
    assert driver.gateway_processes() == [pid]  # the writer is no gateway

    driver.retire_revision(support.operation(), revision)
    wait_for(lambda: not _log_writers(directory), timeout=10, message="the writer to end")
    assert not support.running(writer)
