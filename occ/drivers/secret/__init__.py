"""Secret Drivers: where a Secret's value lives.

The ``secrets`` row always holds a Secret's identity and name; its value column holds what the
selected driver keeps there: the value sealed with occ's key (``sealed``,
``occ.state.secret_store.SecretStore``, the default) or a reference to a tenant-local
Kubernetes Secret (``kubernetes``). The API seals through the driver once a creation is
authorized; a worker unseals the harness credential through it only after re-authorizing the
deploy under its live claim. Values never reach an error message, a log line or a reference.
"""

from __future__ import annotations

from typing import Protocol


class SecretDriver(Protocol):
    """Keeps Secret values and gives them back (never logs or echoes one)."""

    @property
    def id(self) -> str: ...

    def seal(self, namespace_id: str, secret_id: str, value: str) -> bytes:
        """Keep ``value``; what the row's value column holds.

        Raises:
            DependencyUnavailable: the store cannot be written now.
        """
        ...

    def unseal(self, namespace_id: str, secret_id: str, stored: bytes) -> str:
        """The value of a row whose value column holds ``stored``.

        Raises:
            SecretUnreadable: the value is gone or cannot be opened.
            DependencyUnavailable: the store cannot be read now.
        """
        ...

    def remove(self, namespace_id: str, secret_id: str) -> None:
        """Remove what is kept for a deleted Secret (idempotent)."""
        ...
