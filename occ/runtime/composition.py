"""Composition root: Settings -> Database, queue policy and the Secret Driver, built once per
process."""

from __future__ import annotations

from dataclasses import dataclass

from occ.drivers.compute import base
from occ.drivers.secret import SecretDriver
from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import secret_store, values
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


KUBERNETES_SECRETS = "kubernetes"
SECRET_DRIVERS = (secret_store.DRIVER_ID, KUBERNETES_SECRETS)


def secret_driver(settings: Settings) -> SecretDriver:
    """The Secret Driver the settings select (``InvalidSettings`` naming the setting otherwise)."""
    if settings.secret_driver == secret_store.DRIVER_ID:
        return secret_store.SecretStore.from_settings(settings)
    if settings.secret_driver != KUBERNETES_SECRETS:
        raise errors.InvalidSettings.at(
            ("secret_driver",), f"unknown Secret Driver; known: {', '.join(SECRET_DRIVERS)}"
        )
    # imported here: only an installation that selects it pays for the Kubernetes client
    from occ.drivers.secret import kubernetes  # noqa: PLC0415

    try:
        return kubernetes.KubernetesSecrets.from_settings(settings)
    except base.DriverError as exc:
        reason = f"the Kubernetes client cannot be configured: {exc.code}"
        raise errors.InvalidSettings.at(("secret_driver",), reason) from None
