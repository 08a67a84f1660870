"""Launch contributions: the environment entries hook owners may add to a workload's launch.

Only opaque placeholders are accepted (``opaque-...``, never secret material), under names
the runtime does not reserve, at most 64 in all. ``freeze`` is the shared immutability helper:
what an owner receives and the launch snapshot Compute projects are deep, read-only copies.
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base

MAX_ENVIRONMENT_ENTRIES: Final = 64
"""Most launch environment entries the hooks of one workload may contribute together."""

ENVIRONMENT_NAME: Final = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
"""Accepted launch environment names (matched whole)."""

PLACEHOLDER_VALUE: Final = re.compile(r"opaque-[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""Accepted launch environment values: opaque placeholders, never secret material."""

RESERVED_NAMES: Final = frozenset(
    {
        "HOME",
        "PATH",
        "TMPDIR",
        "CODEX_HOME",
        "NODE_OPTIONS",
        "NODE_PATH",
        "BASH_ENV",
        "ENV",
        "LOG_FORMAT",
        "RUST_LOG",
    }
)
"""Names the runtime owns; hooks may not set them."""

RESERVED_PREFIXES: Final = ("XDG_", "OPENCLAW_", "OTEL_", "LD_", "DYLD_")
"""Name prefixes the runtime owns; hooks may not set names starting with them."""

ENVIRONMENT_INVALID: Final = "LAUNCH_ENVIRONMENT_INVALID"
"""Driver code of a launch environment contribution the rules refuse (permanent)."""


@dataclasses.dataclass
class LaunchSpec:
    """What a ``before_workload_start`` hook may add to: the workload's launch environment."""

    environment: dict[str, str] = dataclasses.field(default_factory=dict)


def is_reserved(name: str) -> bool:
    """Whether the runtime owns the environment name ``name``."""
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def validate_environment(environment: Mapping[str, str]) -> None:
    """Raise ``PermanentDriverError`` unless ``environment`` obeys the launch rules."""
    check_entries("launch environment", environment, total=len(environment))


def validated_additions(
    where: str, before: Mapping[str, str], after: Mapping[str, Any]
) -> dict[str, str]:
    """The entries added to ``before`` (``after`` holds both), once they obey the rules; ``where``
    names the contributor in errors. Entries already in ``before`` may not change."""
    for name, value in before.items():
        if after.get(name) != value:
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where} changed or removed an entry another hook added"
            )
    added = {name: value for name, value in after.items() if name not in before}
    check_entries(where, added, total=len(before) + len(added))
    return added


def check_entries(where: str, entries: Mapping[Any, Any], *, total: int) -> None:
    if total > MAX_ENVIRONMENT_ENTRIES:
        raise base.PermanentDriverError(
            ENVIRONMENT_INVALID,
            f"{where}: {total} launch environment entries, at most {MAX_ENVIRONMENT_ENTRIES}",
        )
    for name, value in entries.items():
        # Never quote a value (it could be a secret) nor a name that failed its pattern.
        if not isinstance(name, str) or not ENVIRONMENT_NAME.fullmatch(name):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where}: an environment name is not [A-Z_][A-Z0-9_]*"
            )
        if is_reserved(name):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where}: the environment name {name} is reserved"
            )
        if not isinstance(value, str) or not PLACEHOLDER_VALUE.fullmatch(value):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID,
                f"{where}: the value of {name} is not an opaque placeholder (opaque-...)",
            )


def freeze(value: Any) -> Any:
    """A deep, read-only copy: mappings become ``MappingProxyType``, sequences tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(item) for item in value)
    return value
