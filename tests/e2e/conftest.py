"""Fixtures shared by the end-to-end tests of ``occ dev``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh home outside pytest's private temporary root.

    Run as root, pgserver starts PostgreSQL as the user ``pgserver`` and opens the parents of
    the data directory to it; a concurrent pytest session resets its temporary root to 0700,
    which would lock that user out again.
    """
    parent = Path(tempfile.mkdtemp(prefix="occ-dev-e2e-"))
    yield parent / "home"
    shutil.rmtree(parent, ignore_errors=True)
