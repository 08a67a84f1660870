"""Fixtures for runtime tests: a clean Redis database, short leases, real worker processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.state.db import Database
from tests.support import brokers, databases, gateways, processes, worlds

LEASE_MS = 2_000


@pytest.fixture
def broker_url() -> Iterator[str]:
    with brokers.flushed(13) as url:
        yield url


@pytest.fixture
def admin(db: Database) -> str:
    """The administrator of a bootstrapped Installation (workers refuse to start before it)."""
    return worlds.installation_admin(db, "tasks")


@pytest.fixture
def local_root(tmp_path: Path) -> Iterator[Path]:
    """The local driver's root; gateways still running under it are stopped at the end."""
    root = tmp_path / "local"
    yield root
    gateways.stop_all(root)


@pytest.fixture
def env(
    database_urls: databases.DatabaseUrls, broker_url: str, local_root: Path, db: Database
) -> dict[str, str]:
    return processes.worker_environment(
        database_url=database_urls.app,
        broker_url=broker_url,
        local_root=local_root,
        lease_ms=LEASE_MS,
        claim_interval_ms=60_000,
    )


@pytest.fixture
def fleet(env: dict[str, str], tmp_path: Path) -> Iterator[processes.Fleet]:
    yield from processes.fleet(env, tmp_path)
