"""The ``local`` Compute Driver's revisions: real gateway processes on 127.0.0.1.

Every test starts real ``occ.gateway`` processes (or a configured harness command) under a
temporary root; the fixture kills whatever gateway is left, so none outlives its test.
Readiness is polled with deadlines, never waited for with bare sleeps.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from occ import ids
from occ.drivers.compute import base, hooks
from occ.drivers.compute.local import LocalComputeDriver
from tests.support.processes import wait_for

READY_TIMEOUT = 20.0

GATEWAY_TEMPLATE = [
    sys.executable,
    "-m",
    "occ.gateway",
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


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "local"
    try:
        yield root
    finally:
        _kill_every_gateway(root)


def _kill_every_gateway(root: Path) -> None:
    driver = LocalComputeDriver(root)
    pids = set(driver.gateway_processes())
    for runtime in root.glob("agents/*/revisions/*/runtime.json"):
        pid = json.loads(runtime.read_text(encoding="utf-8")).get("pid")
        if isinstance(pid, int) and _running(pid):
            pids.add(pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    wait_for(
        lambda: not any(_running(pid) for pid in pids),
        timeout=10,
        message="leftover gateways to exit",
    )


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child whose status nobody collected yet)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _operation(work_id: str = "work_1", token: str = "token_1") -> base.Operation:
    return base.Operation(work_id=work_id, claim_token=token, abort=threading.Event())


def _revision(
    agent_id: str,
    *,
    number: int = 1,
    harness: str = "openclaw",
    generation: int = 3,
    document: dict[str, Any] | None = None,
) -> base.RevisionSpec:
    return base.RevisionSpec(
        namespace_id="ns_test",
        agent_id=agent_id,
        revision_id=ids.new("agent_revision"),
        revision_number=number,
        configuration_generation=generation,
        configuration_document=document or {"model": "m", "revision": number},
        harness_id=harness,
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id="prn_test",
    )


def _get(endpoint: str, path: str) -> tuple[int, Any]:
    host, _, port = endpoint.removeprefix("http://").partition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def _until_ready(
    driver: LocalComputeDriver, revision: base.RevisionSpec, operation: base.Operation | None = None
) -> base.Ready:
    operation = operation or _operation()

    def ready() -> base.Ready | None:
        observation = driver.prepare_revision(operation, revision)
        assert not isinstance(observation, base.Failed), observation
        return observation if isinstance(observation, base.Ready) else None

    result = wait_for(ready, timeout=READY_TIMEOUT, message=f"{revision.revision_id} ready")
    assert result is not None
    return result


def _revision_dir(root: Path, revision: base.RevisionSpec) -> Path:
    return root / "agents" / revision.agent_id / "revisions" / revision.revision_id


def _runtime(root: Path, revision: base.RevisionSpec) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        (_revision_dir(root, revision) / "runtime.json").read_text(encoding="utf-8")
    )
    return document


# -- preparation and readiness -------------------------------------------------------------


def test_prepare_is_pending_then_ready_and_the_gateway_serves_the_revision(root: Path) -> None:
    driver = LocalComputeDriver(root)
    document = {"model": "claude", "tools": ["search"], "limits": {"tokens": 1000}}
    revision = _revision(ids.new("agent"), generation=7, document=document)

    first = driver.prepare_revision(_operation(), revision)
    assert first == base.Pending("REVISION_INCOMPLETE")
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None and _running(pid)

    ready = _until_ready(driver, revision)
    endpoint = ready.details["endpoint"]
    runtime = _runtime(root, revision)
    assert endpoint == f"http://127.0.0.1:{runtime['port']}"
    assert runtime["pid"] == pid
    assert {"startedAt", "command"} <= set(runtime)
    assert revision.revision_id in runtime["command"]

    status, health = _get(endpoint, "/healthz")
    assert status == 200
    assert health == {
        "status": "ok",
        "revisionId": revision.revision_id,
        "agentId": revision.agent_id,
        "configurationGeneration": 7,
    }
    assert _get(endpoint, "/config") == (200, document)
    directory = _revision_dir(root, revision)
    assert json.loads((directory / "configuration.json").read_text()) == document
    assert (directory / "gateway.log").exists()

    # Ready again without a new process; every pass was journalled with its claim token.
    assert driver.prepare_revision(_operation(), revision) == ready
    assert driver.revision_process(revision.agent_id, revision.revision_id) == pid
    prepares = [e for e in driver.effects() if e["op"] == "prepare_revision"]
    assert {e["phase"] for e in prepares} == {"started", "ended"}
    assert all(
        e["token"] == "token_1" and e["revisionId"] == revision.revision_id for e in prepares
    )
    driver.retire_revision(_operation(), revision)


def test_the_gateway_environment_holds_nothing_of_the_worker(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCC_SECRET_KEY", "worker-secret-never-in-a-gateway")
    driver = LocalComputeDriver(root)
    revision = _revision(ids.new("agent"))
    _until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    environment = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"worker-secret-never-in-a-gateway" not in environment
    assert b"OCC_SECRET_KEY" not in environment
    assert not list(root.rglob("*secret*"))


# -- activation, replacement, retirement ----------------------------------------------------


def test_activate_a_second_revision_and_retire_the_first(root: Path) -> None:
    driver = LocalComputeDriver(root)
    agent_id = ids.new("agent")
    first, second = _revision(agent_id, number=1), _revision(agent_id, number=2)
    assert driver.active_endpoint(agent_id) is None

    endpoint_1 = _until_ready(driver, first).details["endpoint"]
    activation = driver.activate_revision(_operation(), first)
    assert activation == base.Activation(endpoint_1)
    assert driver.activate_revision(_operation(), first) == activation  # idempotent
    assert driver.active_endpoint(agent_id) == endpoint_1
    assert json.loads((root / "agents" / agent_id / "active.json").read_text()) == {
        "revisionId": first.revision_id,
        "endpoint": endpoint_1,
    }
    pid_1 = driver.revision_process(agent_id, first.revision_id)
    assert pid_1 is not None

    endpoint_2 = _until_ready(driver, second).details["endpoint"]
    assert endpoint_2 != endpoint_1
    assert driver.activate_revision(_operation(), second) == base.Activation(endpoint_2)
    assert driver.active_endpoint(agent_id) == endpoint_2
    assert driver.active_endpoint(agent_id, second.revision_id) == endpoint_2
    assert driver.active_endpoint(agent_id, first.revision_id) is None

    driver.retire_revision(_operation(), first)
    assert not _running(pid_1)
    assert driver.revision_process(agent_id, first.revision_id) is None
    assert not _revision_dir(root, first).exists()
    assert driver.active_endpoint(agent_id) == endpoint_2  # the pointer names the second
    assert _get(endpoint_2, "/healthz")[1]["revisionId"] == second.revision_id
    driver.retire_revision(_operation(), first)  # idempotent

    driver.retire_revision(_operation(), second)
    assert driver.active_endpoint(agent_id) is None  # retiring the active one drops it
    assert driver.gateway_processes() == []
    ops = [(e["op"], e["phase"]) for e in driver.effects()]
    for op in ("prepare_revision", "activate_revision", "retire_revision"):
        assert ops.count((op, "started")) == ops.count((op, "ended")) > 0


def test_activation_needs_a_running_gateway(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = _revision(ids.new("agent"))
    with pytest.raises(base.TransientDriverError) as raised:
        driver.activate_revision(_operation(), revision)
    assert raised.value.code == "REVISION_NOT_RUNNING"
    assert driver.active_endpoint(revision.agent_id) is None


def test_a_new_driver_finds_the_running_gateway_again(root: Path) -> None:
    agent_id = ids.new("agent")
    revision = _revision(agent_id)
    before = LocalComputeDriver(root)
    endpoint = _until_ready(before, revision).details["endpoint"]
    before.activate_revision(_operation(), revision)
    pid = before.revision_process(agent_id, revision.revision_id)
    assert pid is not None

    after = LocalComputeDriver(root)  # a restarted worker: nothing shared but the files
    assert after.revision_process(agent_id, revision.revision_id) == pid
    assert after.active_endpoint(agent_id) == endpoint
    assert after.prepare_revision(_operation("work_2", "token_2"), revision) == base.Ready(
        {"endpoint": endpoint}
    )
    assert after.revision_process(agent_id, revision.revision_id) == pid
    assert _runtime(root, revision)["pid"] == pid
    assert after.gateway_processes() == [pid]
    after.retire_revision(_operation("work_2", "token_2"), revision)
    assert not _running(pid)


def test_a_recycled_pid_is_not_taken_for_the_gateway(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = _revision(ids.new("agent"))
    _until_ready(driver, revision)
    gateway = driver.revision_process(revision.agent_id, revision.revision_id)
    runtime_path = _revision_dir(root, revision) / "runtime.json"
    runtime = _runtime(root, revision)
    runtime["pid"] = os.getpid()  # a live process that is not this revision's gateway
    runtime_path.write_text(json.dumps(runtime), encoding="utf-8")
    # The recorded pid is refused; the marked gateway is an orphan: replaced, not adopted.
    observation = driver.prepare_revision(_operation(), revision)
    assert isinstance(observation, base.Pending | base.Ready)
    assert gateway is not None and not _running(gateway)
    assert _runtime(root, revision)["pid"] not in (gateway, os.getpid())
    _until_ready(driver, revision)
    driver.retire_revision(_operation(), revision)


# -- stop ----------------------------------------------------------------------------------


def test_stop_keeps_the_files_and_a_later_prepare_starts_again(root: Path) -> None:
    # Through the `occ gateway` command, so its clean SIGTERM exit is seen in the log.
    command = [
        sys.executable,
        "-c",
        "from occ.cli import main; main()",
        "gateway",
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
    driver = LocalComputeDriver(root, harness_commands={"cli": command})
    revision = _revision(ids.new("agent"), harness="cli")
    endpoint = _until_ready(driver, revision).details["endpoint"]
    driver.activate_revision(_operation(), revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None

    driver.stop_revision(_operation(), revision)
    assert not _running(pid)
    assert driver.revision_process(revision.agent_id, revision.revision_id) is None
    directory = _revision_dir(root, revision)
    assert (directory / "configuration.json").exists()
    runtime = _runtime(root, revision)
    assert runtime["pid"] is None and "stoppedAt" in runtime
    log = (directory / "gateway.log").read_text(encoding="utf-8")
    assert '"event":"gateway.stopped"' in log
    assert driver.active_endpoint(revision.agent_id) == endpoint  # the reconciler's business
    driver.stop_revision(_operation(), revision)  # idempotent when nothing runs

    _until_ready(driver, revision)
    assert driver.revision_process(revision.agent_id, revision.revision_id) not in (None, pid)
    driver.retire_revision(_operation(), revision)


def test_stop_escalates_to_sigkill(root: Path) -> None:
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
        "{revision_id}",
    ]
    driver = LocalComputeDriver(root, harness_commands={"stubborn": stubborn}, stop_timeout_s=0.5)
    revision = _revision(ids.new("agent"), harness="stubborn")
    assert driver.prepare_revision(_operation(), revision) == base.Pending("REVISION_INCOMPLETE")
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None
    # Wait until the interpreter ignores SIGTERM (its handler is installed).
    wait_for(lambda: _sigterm_ignored(pid), timeout=10, message="SIGTERM ignored")
    started = time.monotonic()
    driver.stop_revision(_operation(), revision)
    assert not _running(pid)
    assert time.monotonic() - started < 8


def _sigterm_ignored(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


# -- runtimes that do not become ready -------------------------------------------------------


def test_an_unhealthy_gateway_stays_pending(root: Path) -> None:
    driver = LocalComputeDriver(root, harness_commands={"sick": [*GATEWAY_TEMPLATE, "--unhealthy"]})
    revision = _revision(ids.new("agent"), harness="sick")
    assert driver.prepare_revision(_operation(), revision) == base.Pending("REVISION_INCOMPLETE")
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    endpoint = f"http://127.0.0.1:{_runtime(root, revision)['port']}"

    def answers_unhealthy() -> bool:
        with contextlib.suppress(OSError):
            return _get(endpoint, "/healthz")[0] == 503
        return False

    wait_for(answers_unhealthy, timeout=READY_TIMEOUT, message="the gateway to answer 503")
    for _ in range(3):
        assert driver.prepare_revision(_operation(), revision) == base.Pending(
            "REVISION_INCOMPLETE"
        )
    assert driver.revision_process(revision.agent_id, revision.revision_id) == pid
    driver.retire_revision(_operation(), revision)


def test_a_gateway_that_keeps_exiting_fails_after_one_restart(root: Path) -> None:
    crashing = [sys.executable, "-c", "import sys; sys.exit(3)", "{revision_id}"]
    driver = LocalComputeDriver(root, harness_commands={"crash": crashing})
    revision = _revision(ids.new("agent"), harness="crash")

    def exited() -> bool:
        return driver.revision_process(revision.agent_id, revision.revision_id) is None

    assert driver.prepare_revision(_operation(), revision) == base.Pending("REVISION_INCOMPLETE")
    assert _runtime(root, revision)["restarts"] == 0
    wait_for(exited, timeout=10, message="the first start to exit")
    assert driver.prepare_revision(_operation(), revision) == base.Pending("REVISION_INCOMPLETE")
    assert _runtime(root, revision)["restarts"] == 1
    wait_for(exited, timeout=10, message="the restart to exit")
    failed = driver.prepare_revision(_operation(), revision)
    assert isinstance(failed, base.Failed)
    assert (failed.code, failed.permanent) == ("RUNTIME_STARTUP_FAILED", False)
    # The retry starts from scratch.
    assert driver.prepare_revision(_operation(), revision) == base.Pending("REVISION_INCOMPLETE")
    assert _runtime(root, revision)["restarts"] == 0
    wait_for(exited, timeout=10, message="the fresh start to exit")
    driver.retire_revision(_operation(), revision)


def test_a_command_that_cannot_run_fails_permanently(root: Path) -> None:
    driver = LocalComputeDriver(
        root, harness_commands={"missing": [str(root / "no-such-harness"), "{port}"]}
    )
    revision = _revision(ids.new("agent"), harness="missing")
    failed = driver.prepare_revision(_operation(), revision)
    assert isinstance(failed, base.Failed)
    assert (failed.code, failed.permanent) == ("RUNTIME_STARTUP_FAILED", True)
    driver.retire_revision(_operation(), revision)


# -- abort ---------------------------------------------------------------------------------


def test_an_aborted_operation_does_nothing(root: Path) -> None:
    driver = LocalComputeDriver(root)
    revision = _revision(ids.new("agent"))
    operation = _operation()
    operation.abort.set()
    with pytest.raises(base.Aborted):
        driver.prepare_revision(operation, revision)
    assert not _revision_dir(root, revision).exists()
    assert driver.gateway_processes() == []


def test_an_abort_during_the_effect_stops_it(root: Path) -> None:
    driver = LocalComputeDriver(root, effect_delay_s=30)
    revision = _revision(ids.new("agent"))
    operation = _operation()
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
    # The journal's rule for an effect aborted during its simulated duration: it started,
    # it never ended (nothing was done).
    assert [(e["op"], e["phase"]) for e in driver.effects()] == [("prepare_revision", "started")]
    assert not _revision_dir(root, revision).exists()


# -- Agent deletion ------------------------------------------------------------------------


def test_delete_agent_credentials_removes_the_agent_directory(root: Path) -> None:
    driver = LocalComputeDriver(root)
    agent_id = ids.new("agent")
    other_agent = _revision(ids.new("agent"))
    first, second = _revision(agent_id, number=1), _revision(agent_id, number=2)
    for revision in (first, second, other_agent):
        _until_ready(driver, revision)
    driver.activate_revision(_operation(), second)
    driver.retire_revision(_operation(), first)
    leftover = driver.revision_process(agent_id, second.revision_id)  # never retired

    driver.delete_agent_credentials(_operation(), "ns_test", agent_id)
    assert not (root / "agents" / agent_id).exists()
    assert leftover is not None and not _running(leftover)
    assert driver.active_endpoint(agent_id) is None
    driver.delete_agent_credentials(_operation(), "ns_test", agent_id)  # idempotent
    driver.retire_revision(_operation(), second)  # a repeated retirement recreates nothing
    driver.stop_revision(_operation(), second)
    assert not (root / "agents" / agent_id).exists()
    # Another Agent is untouched.
    assert driver.revision_process(other_agent.agent_id, other_agent.revision_id) is not None
    driver.retire_revision(_operation(), other_agent)


# -- lifecycle hooks -----------------------------------------------------------------------


@dataclass
class RecordingHook:
    name: str
    environment: dict[str, str] = field(default_factory=dict)
    fail_stop: bool = False
    fail_namespace_delete: bool = False
    calls: list[tuple[str, str]] = field(default_factory=list)

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self.calls.append(("after_namespace_prepared", namespace.id))

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        self.calls.append(("before_workload_start", revision.revision_id))
        launch.environment.update(self.environment)

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.calls.append(("before_workload_stop", revision.revision_id))
        if self.fail_stop:
            raise base.TransientDriverError("REVOCATION_PENDING")

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self.calls.append(("before_namespace_delete", namespace.id))
        if self.fail_namespace_delete:
            raise base.TransientDriverError("REVOCATION_PENDING")


def test_launch_placeholders_reach_the_gateway_and_stop_revokes_first(root: Path) -> None:
    hook = RecordingHook("sandbox:test", environment={"SANDBOX_TOKEN": "opaque-sbx.token-1"})
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([hook]))
    revision = _revision(ids.new("agent"))
    _until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"SANDBOX_TOKEN=opaque-sbx.token-1" in environment
    assert hook.calls == [("before_workload_start", revision.revision_id)]  # started once
    assert _runtime(root, revision)["environmentNames"] == ["SANDBOX_TOKEN"]

    hook.fail_stop = True  # revocation fails: the stop is aborted, the gateway keeps running
    with pytest.raises(base.TransientDriverError) as raised:
        driver.retire_revision(_operation(), revision)
    assert "sandbox:test" in raised.value.reason
    assert pid is not None and _running(pid)
    assert _revision_dir(root, revision).exists()

    hook.fail_stop = False
    driver.retire_revision(_operation(), revision)
    assert not _running(pid)
    assert hook.calls[-1] == ("before_workload_stop", revision.revision_id)


def test_a_refused_launch_environment_starts_nothing(root: Path) -> None:
    hook = RecordingHook("iam:test", environment={"API_KEY": "sk-live-plaintext"})
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([hook]))
    revision = _revision(ids.new("agent"))
    with pytest.raises(base.PermanentDriverError) as raised:
        driver.prepare_revision(_operation(), revision)
    assert raised.value.code == hooks.ENVIRONMENT_INVALID
    assert driver.revision_process(revision.agent_id, revision.revision_id) is None
    assert driver.gateway_processes() == []
    assert hook.calls == [
        ("before_workload_start", revision.revision_id),
        ("before_workload_stop", revision.revision_id),
    ]
    assert "sk-live-plaintext" not in (root / "effects.jsonl").read_text()


def test_namespace_hooks(root: Path) -> None:
    first, second = RecordingHook("configuration:a"), RecordingHook("iam:b")
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([first, second]))
    namespace = base.NamespaceSpec(id=ids.new("namespace"), name="team")
    assert isinstance(driver.ensure_namespace(_operation(), namespace), base.Ready)
    assert first.calls == second.calls == [("after_namespace_prepared", namespace.id)]

    first.fail_namespace_delete = True  # in reverse: b ran, a failed; the directory stays
    with pytest.raises(base.TransientDriverError):
        driver.delete_namespace(_operation(), namespace)
    assert (root / "namespaces" / namespace.id).exists()
    assert second.calls[-1] == ("before_namespace_delete", namespace.id)

    first.fail_namespace_delete = False
    assert driver.delete_namespace(_operation(), namespace) == base.Ready()
    assert not (root / "namespaces" / namespace.id).exists()


def test_maintenance_interval_is_off_unless_configured(root: Path) -> None:
    assert LocalComputeDriver(root).capabilities == base.Capabilities(
        activation_order=base.ActivationOrder.AFTER_COMMIT
    )
    assert (
        LocalComputeDriver(root, maintenance_interval_s=2).capabilities.maintenance_interval_s == 2
    )
    assert isinstance(LocalComputeDriver(root), base.ComputeDriver)
