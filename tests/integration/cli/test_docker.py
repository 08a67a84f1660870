"""``occ docker log-gate`` as a process: it serves the engine's version through its socket,
refuses a write, and stops on SIGTERM (the gate's rules: the docker driver's tests)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.drivers.docker.objects import engine_host
from tests.integration.drivers.docker.test_log_gate import ask
from tests.support.processes import clean_environment, wait_for

OCC = str(Path(sys.executable).with_name("occ"))


@pytest.fixture
def directory() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="occ-gate-"))  # short: a socket path has a limit
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_gate_serves_reads_refuses_writes_and_stops_on_sigterm(directory: Path) -> None:
    engine = engine_host()
    assert engine.startswith("unix://")
    socket_path = directory / "docker.sock"
    argv = [OCC, "docker", "log-gate", "--socket", str(socket_path)]
    gate = subprocess.Popen(
        [*argv, "--engine", engine.removeprefix("unix://")],
        env=clean_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(socket_path.exists, timeout=20, message="the gate's socket")
        status, version = ask(f"unix://{socket_path}", "GET", "/version")
        assert status == 200 and version["ApiVersion"]
        assert ask(f"unix://{socket_path}", "POST", "/containers/create", {"Image": "x"})[0] == 403
        gate.send_signal(signal.SIGTERM)
        assert gate.wait(timeout=10) == -signal.SIGTERM
    finally:
        if gate.poll() is None:
            gate.kill()
            gate.wait()
    output = gate.stdout.read().decode() if gate.stdout else ""
    assert "docker.log-gate-serving" in output
    assert "docker.log-gate-refused" in output
