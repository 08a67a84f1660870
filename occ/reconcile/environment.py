"""What a worker process reconciles with: database, queue policy, driver, settings, shutdown,
and the Installation row it caches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from occ.drivers.account import AccountBackend
from occ.drivers.compute import base
from occ.drivers.secret import SecretDriver
from occ.settings.config import Settings
from occ.state import installation, values
from occ.state.db import Database, Session

INSTALLATION_TTL_S: Final = 5.0
"""How long a worker trusts the Installation row it read (it changes only at bootstrap)."""


class InstallationCache:
    """The Installation as last read, for ``INSTALLATION_TTL_S``; a missing one is not cached."""

    def __init__(
        self, ttl_s: float = INSTALLATION_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._read: tuple[float, installation.Installation] | None = None

    def current(self, session: Session) -> installation.Installation | None:
        read = self._read
        if read is not None and self._clock() - read[0] < self._ttl_s:
            return read[1]
        current = installation.current(session)
        self._read = None if current is None else (self._clock(), current)
        return current


@dataclass(frozen=True)
class Worker:
    """One worker process's collaborators (built once per process, after fork)."""

    database: Database
    policy: values.QueuePolicy
    driver: base.ComputeDriver
    shutdown: threading.Event
    settings: Settings
    installation: InstallationCache = field(default_factory=InstallationCache)
    secrets: SecretDriver | None = None
    """Where harness credentials are unsealed (unset: the sealed store keyed by ``settings``)."""
    accounts: AccountBackend | None = None
    """The account Backend that delivers managed-account tokens (unset: none selected)."""
    renewals: Database | None = None
    """Where lease renewals run, with a statement timeout shorter than a third of the lease
    (unset: ``database``)."""
