"""The bootstrapped Installation the use-case tests act in, and its first administrator."""

from __future__ import annotations

import pytest

from occ.controller import installation
from occ.state.db import Database


@pytest.fixture
def boot(db: Database) -> installation.BootstrapResult:
    return installation.bootstrap_installation(db, name="test installation", admin_name="admin")


@pytest.fixture
def admin(boot: installation.BootstrapResult) -> str:
    """The bootstrap administrator's principal id."""
    assert boot.admin_principal_id is not None
    return boot.admin_principal_id
