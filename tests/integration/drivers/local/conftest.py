"""Fixtures for the ``local`` driver's integration tests: a root no gateway outlives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.drivers.local import support


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A fresh driver root; every gateway started under it is killed after the test."""
    root = tmp_path / "local"
    try:
        yield root
    finally:
        support.kill_every_gateway(root)
