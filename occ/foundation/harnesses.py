"""The harness catalogue: which harnesses occ runs and the execution mode each one runs in.

The one definition the API, the admission checks and the workers read; the schema's CHECK
constraints spell the same pairs.
"""

from __future__ import annotations

import enum
from typing import Final


class Harness(enum.StrEnum):
    """A harness an Agent may run."""

    OPENCLAW = "openclaw"
    CODEX = "codex"


class ExecutionMode(enum.StrEnum):
    """How a harness runs: inside the shared gateway, or in a workload of its own."""

    EMBEDDED = "embedded"
    DEDICATED = "dedicated"


MODES: Final[dict[str, ExecutionMode]] = {
    Harness.OPENCLAW: ExecutionMode.EMBEDDED,
    Harness.CODEX: ExecutionMode.DEDICATED,
}
"""The execution mode of each harness (the only mode it may run in)."""


def mode_of(harness_id: str) -> ExecutionMode | None:
    """The execution mode of a harness, or ``None`` for an unknown one."""
    return MODES.get(harness_id)
