"""Sandbox Drivers: confine what an Agent's runtime may reach and write.

A Sandbox Driver takes part twice: at deploy admission it transforms a copy of the native
Configuration (``transform``) before the copy is validated and pinned in the revision; at
launch it owns lifecycle hooks that contribute opaque placeholders naming the pinned policy.
``reference`` is the one implementation, written to be copied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class SandboxDriver(Protocol):
    """What deploy admission asks of the selected Sandbox Driver."""

    @property
    def id(self) -> str: ...

    def transform(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """A transformed copy of a native Configuration document (``document`` unchanged)."""
        ...
