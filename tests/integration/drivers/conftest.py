"""Fixtures of the driver tests: the worker fleet (the tasks tests' own, re-used) and one
OpenSSH server per session for the ``ssh`` driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.tasks.conftest import broker_url, env, fleet, local_root  # noqa: F401
from tests.support import ssh_server


@pytest.fixture(scope="session")
def ssh_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ssh_server.Server]:
    """A real sshd on a loopback port, with generated host and user keys."""
    with ssh_server.running(Path(tmp_path_factory.mktemp("sshd"))) as server:
        yield server
