"""Stable names of occ's Celery queues and tasks (messages in flight outlive renames), and the
version of the payloads this release writes and reads."""

from __future__ import annotations

from typing import Final

CONTROL_QUEUE: Final = "occ.control"
DRIVER_QUEUE: Final = "occ.drivers"

CLAIM: Final = "occ.claim"
RECOVER_STALE: Final = "occ.recover_stale"
RUN_WORK: Final = "occ.run_work"
OBSERVE_RUNTIMES: Final = "occ.observe_runtimes"
PRUNE: Final = "occ.prune"

PAYLOAD_VERSION: int = 2
"""The newest ``occ.run_work`` payload this release writes and reads: 1 is ``[work_id,
dispatch_token]`` (the releases before versioning), 2 adds ``version`` (a keyword). A worker
runs every payload up to its own version and defers a newer one (``WORK_VERSION_UNSUPPORTED``)
for a newer worker to take; each release that changes the payload raises it."""
