"""Fixtures for runtime tests: a clean Redis database, short leases, real worker processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from occ.db import Database
from tests.support import brokers, databases, gateways, processes

LEASE_MS = 2_000


@pytest.fixture
def broker_url() -> Iterator[str]:
    with brokers.flushed(13) as url:
        yield url


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
        settings={
            "OCC_WORKER_LEASE_DURATION_MS": str(LEASE_MS),
            "OCC_CLAIM_INTERVAL_MS": "60000",
            "OCC_API_KEY_PEPPER": "test-pepper",
            "OCC_SECRET_KEY": "test-secret",
        },
    )


@pytest.fixture
def fleet(env: dict[str, str], tmp_path: Path) -> Iterator[processes.Fleet]:
    yield from processes.fleet(env, tmp_path)
