"""The database Configuration Driver: the document lives in the ``configurations`` row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.configuration import reference_of
from occ.foundation import errors

DRIVER_ID: Final = "database"


class DatabaseConfigurations:
    """The row's ``document`` column is the document."""

    id: Final = DRIVER_ID

    def keep(
        self, namespace_id: str, configuration_id: str, generation: int, document: dict[str, Any]
    ) -> dict[str, Any]:
        return document

    def load(
        self, namespace_id: str, configuration_id: str, stored: Mapping[str, Any]
    ) -> dict[str, Any]:
        reference = reference_of(stored)
        if reference is not None:
            raise errors.DependencyUnavailable(
                f"the Configuration's document is kept by the {reference.get('driver')} "
                "Configuration Driver, which is not selected"
            )
        return dict(stored)

    def forget(self, namespace_id: str, configuration_id: str) -> None:
        """Nothing is kept outside the row."""


DATABASE: Final = DatabaseConfigurations()
"""The default driver (stateless, shared)."""
