"""Fixtures of the IAM hook tests: the ``local`` driver tests' root, re-used (its gateways run
the identities)."""

from __future__ import annotations

from tests.integration.drivers.local.conftest import root  # noqa: F401
