"""Fixtures of the driver tests that run the worker fleet: the tasks tests' own, re-used."""

from __future__ import annotations

from tests.integration.tasks.conftest import broker_url, env, fleet, local_root  # noqa: F401
