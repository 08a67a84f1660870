"""Fixtures of the ``ssh`` driver's tests: a fresh host root and a driver on the session's
real OpenSSH server; everything the supervisor started there is stopped afterwards."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.ssh import SshComputeDriver, hosts
from tests.support import ssh_server

MakeDriver = Callable[..., SshComputeDriver]


@pytest.fixture
def root() -> Iterator[Path]:
    path = ssh_server.new_root()
    try:
        yield path
    finally:
        ssh_server.cleanup(path)


@pytest.fixture
def make_driver(ssh_host: ssh_server.Server, root: Path) -> Iterator[MakeDriver]:
    made: list[SshComputeDriver] = []

    def make(
        entries: list[dict[str, Any]] | None = None, *, at: Path | None = None, **options: Any
    ) -> SshComputeDriver:
        pool = hosts.parse_pool(entries or [ssh_host.pool_entry()])
        driver = SshComputeDriver(pool, root=str(at or root), readiness_wait_s=5, **options)
        made.append(driver)
        return driver

    yield make
    for driver in made:
        driver.close()


@pytest.fixture
def operation() -> base.Operation:
    return base.Operation(work_id="work-1", claim_token="token-1", abort=threading.Event())


def namespace() -> base.NamespaceSpec:
    return base.NamespaceSpec(id=f"ns_{uuid.uuid4().hex[:12]}", name="team")


def revision(
    namespace_id: str, agent_id: str | None = None, number: int = 1, *, credential: bool = True
) -> base.RevisionSpec:
    return base.RevisionSpec(
        namespace_id=namespace_id,
        agent_id=agent_id or f"agt_{uuid.uuid4().hex[:12]}",
        revision_id=f"rev_{uuid.uuid4().hex[:12]}",
        revision_number=number,
        configuration_generation=number,
        configuration_document={"model": "stand-in", "n": number},
        harness_id="openclaw",
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id="prn_test",
        credential=base.Credential(CREDENTIAL, "test-fingerprint-key") if credential else None,
    )


CREDENTIAL = "sk-ssh-never-in-a-unit"
