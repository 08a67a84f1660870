"""Composition root: Settings -> Database and queue policy, built once per process."""

from __future__ import annotations

from dataclasses import dataclass

from occ.settings.config import Settings
from occ.state import values
from occ.state.db import Database


@dataclass(frozen=True)
class Runtime:
    """What one process runs with."""

    settings: Settings
    database: Database

    @property
    def policy(self) -> values.QueuePolicy:
        return queue_policy(self.settings)


def queue_policy(settings: Settings) -> values.QueuePolicy:
    """The queue's numbers from the settings."""
    return values.QueuePolicy(
        lease_ms=settings.lease_ms,
        dispatch_lease_ms=settings.dispatch_lease_ms,
        max_attempts=settings.max_attempts,
        convergence_timeout_ms=settings.convergence_timeout_ms,
    )


def build(
    settings: Settings | None = None,
    *,
    pool_size: int = 5,
    application_name: str = "occ",
    statement_timeout_ms: int | None = None,
) -> Runtime:
    """Build the runtime of one process (settings from the environment when not given)."""
    settings = settings or Settings.from_env()
    database = Database(
        settings.database_url,
        pool_size=pool_size,
        application_name=application_name,
        statement_timeout_ms=statement_timeout_ms,
    )
    return Runtime(settings=settings, database=database)
