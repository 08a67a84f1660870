"""Configuration Drivers: where a Configuration's native document lives.

The ``configurations`` row always holds the Configuration's identity, name and generation;
what its ``document`` column holds is the selected driver's business: the document itself
(``database``, the default) or a reference to where the driver keeps it (``filesystem``, the
development root the API writes). Use cases write through ``keep`` and read through ``load``,
so a bodyless deploy pins the native document whichever driver holds it. Only the API uses a
Configuration Driver: revisions carry their own snapshot to the workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

MARKER: Final = "$occConfiguration"
"""The key of a stored reference (``{MARKER: {"driver": ..., ...}}``) in the row's document."""


class ConfigurationDriver(Protocol):
    """Keeps and loads native Configuration documents, one per generation."""

    @property
    def id(self) -> str: ...

    def keep(
        self, namespace_id: str, configuration_id: str, generation: int, document: dict[str, Any]
    ) -> dict[str, Any]:
        """Keep ``document`` as that generation; what the row's ``document`` column holds."""
        ...

    def load(
        self, namespace_id: str, configuration_id: str, stored: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The native document of a row whose ``document`` column holds ``stored``.

        Raises:
            DependencyUnavailable: the document cannot be read.
        """
        ...

    def forget(self, namespace_id: str, configuration_id: str) -> None:
        """Remove whatever is kept for a deleted Configuration (idempotent)."""
        ...


def reference_of(stored: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The driver reference ``stored`` holds, or ``None`` for a document kept in the row."""
    found = stored.get(MARKER) if len(stored) == 1 else None
    return found if isinstance(found, Mapping) else None
