"""Fixtures for the ``docker`` driver's tests on a real Docker Engine (``OCC_TEST_DOCKER_HOST``).

Every test gets fresh ids, so its objects never meet another test's; ``sweep`` removes
whatever a test left with occ's labels. ``gate_host`` is a log gate in front of the engine.
The runtime fixtures (``env``, ``fleet``, ``broker_url``) are the tasks tests' own, re-used
here.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, log_gate
from tests.integration.drivers.docker.objects import engine_client, engine_host, make_driver, sweep
from tests.integration.tasks.conftest import broker_url, env, fleet, local_root  # noqa: F401


@pytest.fixture(scope="session")
def docker_host() -> str:
    return engine_host()


@pytest.fixture
def gate_host(docker_host: str) -> Iterator[str]:
    """The ``unix://`` address of a log gate in front of the test engine, serving on a thread."""
    assert docker_host.startswith("unix://"), "the gate relays to a unix socket"
    directory = Path(tempfile.mkdtemp(prefix="occ-gate-"))  # short: a socket path has a limit
    gate = log_gate.LogGate(
        str(directory / "docker.sock"), docker_host.removeprefix("unix://"), idle_s=30.0
    )
    serving = threading.Thread(target=gate.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"unix://{directory / 'docker.sock'}"
    finally:
        gate.shutdown()
        gate.server_close()
        serving.join(timeout=5)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def client(docker_host: str) -> Iterator[Any]:
    """The SDK client the tests inspect the engine with (independent of the driver's)."""
    sdk = engine_client(docker_host)
    try:
        yield sdk
    finally:
        sdk.close()


@pytest.fixture
def driver(docker_host: str) -> DockerComputeDriver:
    return make_driver(docker_host)


@pytest.fixture
def operation() -> base.Operation:
    return base.Operation("test:work", "token-1", threading.Event())


@pytest.fixture
def namespace_id(client: Any) -> Iterator[str]:
    """A fresh Namespace id; everything labelled with it is removed afterwards."""
    identifier = f"ns_{uuid.uuid4().hex[:12]}"
    yield identifier
    sweep(client, identifier)
