"""Gateway commands, environments and the health probe of the ``local`` driver."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from occ.drivers.compute import base, standin
from occ.drivers.compute.local import gateways
from tests.support import specs

REVISION = specs.revision(
    configuration_generation=4,
    credential=base.Credential("sk-never-in-a-command", "test-fingerprint-key"),
)


def test_the_stand_in_gets_the_credential_file_path_only_when_there_is_one() -> None:
    snapshot, credential = Path("/r/configuration.json"), Path("/r/credential")
    without = gateways.command(None, REVISION, port=4100, snapshot=snapshot, credential_file=None)
    assert without[:3] == [sys.executable, "-m", "occ.drivers.gateway"]
    assert "--credential-file" not in without
    assert without[without.index("--port") + 1] == "4100"
    assert without[without.index("--generation") + 1] == "4"
    assert without[without.index("--config") + 1] == str(snapshot)
    with_file = gateways.command(
        None, REVISION, port=4100, snapshot=snapshot, credential_file=credential
    )
    assert with_file == [*without, "--credential-file", str(credential)]
    assert "sk-never-in-a-command" not in " ".join(with_file)


def test_a_template_gets_every_placeholder_replaced_in_every_argument() -> None:
    template = ["harness", "--listen=127.0.0.1:{port}", "{revision_id}/{agent_id}", "{generation}"]
    template += ["--config={config}", "--secret-file", "{credential_file}"]
    command = gateways.command(
        template,
        REVISION,
        port=4100,
        snapshot=Path("/r/configuration.json"),
        credential_file=Path("/r/credential"),
    )
    assert command == [
        "harness",
        "--listen=127.0.0.1:4100",
        "rev_1/agt_1",
        "4",
        "--config=/r/configuration.json",
        "--secret-file",
        "/r/credential",
    ]
    assert set(gateways.PLACEHOLDERS) >= {"{port}", "{config}", "{credential_file}"}


def test_only_a_template_naming_the_credential_file_needs_one() -> None:
    assert gateways.needs_credential(["harness", "--key-file={credential_file}"])
    assert not gateways.needs_credential(["harness", "{port}"])
    assert not gateways.needs_credential(None)  # the stand-in runs with or without one


def test_the_environment_holds_only_the_launch_entries_and_the_runtime_basics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OCC_SECRET_KEY", "worker-secret")
    directory = Path("/r/agents/agt_1/revisions/rev_1")
    launch = {"SANDBOX_TOKEN": "opaque-sbx.1"}
    environment = gateways.environment(directory, launch, stand_in=False)
    assert set(environment) == {
        "SANDBOX_TOKEN",
        "PATH",
        "HOME",
        "LANG",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        gateways.MARKER,
    }
    assert environment["HOME"] == environment[gateways.MARKER] == str(directory)
    assert "worker-secret" not in environment.values()
    stand_in = gateways.environment(directory, launch, stand_in=True)
    assert Path(stand_in["PYTHONPATH"], "occ", "drivers", "gateway.py").is_file()


class _HealthServer(http.server.HTTPServer):
    answer: tuple[int, bytes] = (200, b"{}")


class _Health(http.server.BaseHTTPRequestHandler):
    server: _HealthServer

    def do_GET(self) -> None:
        status, body = self.server.answer
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def health_server() -> Iterator[_HealthServer]:
    server = _HealthServer((gateways.HOST, 0), _Health)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize(
    ("status", "body", "healthy"),
    [
        (200, {"status": "ok", "revisionId": "rev_1"}, True),
        (200, {"status": "ok", "revisionId": "rev_other"}, False),  # another revision's port
        (503, {"status": "unhealthy", "revisionId": "rev_1"}, False),
        (200, ["rev_1"], False),
    ],
)
def test_the_probe_wants_200_naming_the_revision(
    health_server: _HealthServer, status: int, body: object, healthy: bool
) -> None:
    health_server.answer = (status, json.dumps(body).encode())
    port = health_server.server_address[1]
    assert standin.answers_for(int(port), "rev_1", timeout_s=2) is healthy


def test_the_probe_of_a_port_nobody_listens_on_is_unhealthy() -> None:
    port = gateways.free_port()
    assert standin.answers_for(port, "rev_1", timeout_s=0.5) is False


def test_a_process_that_is_no_gateway_is_not_taken_for_one(tmp_path: Path) -> None:
    assert gateways.is_gateway(os.getpid(), tmp_path, "rev_1") is False
    assert gateways.recorded_process({"pid": os.getpid(), "port": 1}, tmp_path, "rev_1") is None
    assert gateways.revision_processes({}, tmp_path / "missing", "rev_1") == []


def _fake_process(proc: Path, pid: int, *, state: str = "S") -> Path:
    """A ``/proc/<pid>`` with an empty command line and environment, as during exec."""
    process = proc / str(pid)
    process.mkdir(parents=True, exist_ok=True)
    (process / "stat").write_text(f"{pid} (python3) {state} 1 {pid} {pid} 0 -1\n")
    (process / "cmdline").write_bytes(b"")
    (process / "environ").write_bytes(b"")
    return process


def _later(action: Callable[[], object]) -> threading.Timer:
    timer = threading.Timer(0.03, action)
    timer.start()
    return timer


def test_a_gateway_seen_while_it_execs_is_read_again_and_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = _fake_process(tmp_path / "proc", 4242)
    monkeypatch.setattr(gateways, "_PROC", tmp_path / "proc")
    timer = _later(lambda: (process / "cmdline").write_bytes(b"python3\0-c\0rev_1\0"))
    try:
        assert gateways.is_gateway(4242, tmp_path / "revision", "rev_1")
    finally:
        timer.join()


def test_a_live_process_without_an_identity_is_not_a_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_process(tmp_path / "proc", 4243)  # a kernel thread: empty for good
    monkeypatch.setattr(gateways, "_PROC", tmp_path / "proc")
    monkeypatch.setattr(gateways, "IDENTITY_SETTLE_S", 0.05)
    assert not gateways.is_gateway(4243, tmp_path / "revision", "rev_1")


def test_a_process_that_exits_while_it_is_read_again_is_not_a_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = _fake_process(tmp_path / "proc", 4244)
    monkeypatch.setattr(gateways, "_PROC", tmp_path / "proc")
    timer = _later(lambda: (process / "stat").write_text("4244 (python3) Z 1 4244 4244\n"))
    try:
        assert not gateways.is_gateway(4244, tmp_path / "revision", "rev_1")
    finally:
        timer.join()
