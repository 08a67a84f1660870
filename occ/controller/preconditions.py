"""A caller's expectation of a resource's version (``If-Match``), checked on the locked row.

A resource's version tag is strong: ``"g<generation>"`` for resources that count their
changes (Configurations), otherwise a digest of the resource id and its ``updated_at`` to the
microsecond (Agents, Namespaces, Secrets). A use case that changes or deletes such a resource
takes the caller's ``Expected`` and calls ``check`` on the row it holds locked, inside its
own transaction: a concurrent change in between cannot slip through.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Final

from occ.foundation import errors

ANY: Final = "*"
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Expected:
    """The version tags a caller accepts (``*``: any existing version)."""

    tags: frozenset[str]

    def admits(self, current: str | None) -> bool:
        return current is not None and (ANY in self.tags or current in self.tags)


def tag(
    resource_id: str, *, generation: int | None = None, updated_at: dt.datetime | None = None
) -> str | None:
    """The strong version tag of a resource, or ``None`` when it has no version."""
    if generation is not None:
        return f'"g{generation}"'
    if updated_at is not None:
        if updated_at.tzinfo is None:
            updated_at = updated_at.replace(tzinfo=dt.UTC)
        micros = (updated_at - _EPOCH) // dt.timedelta(microseconds=1)
        digest = hashlib.sha256(f"{resource_id}\n{micros}".encode()).hexdigest()
        return f'"u{digest[:32]}"'
    return None


def check(expected: Expected | None, current: str | None) -> None:
    """``PreconditionFailed`` unless ``expected`` (when given) admits the current tag."""
    if expected is not None and not expected.admits(current):
        raise errors.PreconditionFailed(
            "the resource changed since it was read (If-Match does not match its ETag)"
        )
