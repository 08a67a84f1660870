"""What a worker process reconciles with: database, queue policy, driver, settings, shutdown."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from occ.config import Settings
from occ.db import Database
from occ.drivers.compute import base
from occ.state import values


@dataclass(frozen=True)
class Worker:
    """One worker process's collaborators (built once per process, after fork)."""

    database: Database
    policy: values.QueuePolicy
    driver: base.ComputeDriver
    shutdown: threading.Event
    settings: Settings
