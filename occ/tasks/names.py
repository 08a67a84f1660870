"""Stable names of occ's Celery queues and tasks (messages in flight outlive renames)."""

from __future__ import annotations

from typing import Final

CONTROL_QUEUE: Final = "occ.control"
DRIVER_QUEUE: Final = "occ.drivers"

CLAIM: Final = "occ.claim"
RECOVER_STALE: Final = "occ.recover_stale"
RUN_WORK: Final = "occ.run_work"
OBSERVE_RUNTIMES: Final = "occ.observe_runtimes"
PRUNE: Final = "occ.prune"
