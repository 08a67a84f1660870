"""The ``occ`` command: database migrations and bootstrap, occ's processes, the stand-in
gateway, the REST client, and the version.

An entry point like ``web`` and ``tasks``: it reads settings once through
``Settings.from_env()`` and calls the core. Errors of occ (``OccError``) end the command with
one line on stderr and exit code 2; nothing prints a traceback or a connection URL. The group
is ``occ.cli.root``; the server's command modules load only when one of their commands runs
(or when one is named here, as ``occ.cli.dev``).
"""

from __future__ import annotations

import importlib
from typing import Any

from occ.cli.root import cli, main

EXIT_OCC_ERROR = 2
"""Exit code of a command that failed with an ``OccError`` (``occ.cli.base``)."""

_SUBMODULES = ("audit_archive", "base", "database", "kubernetes", "processes")

__all__ = ["EXIT_OCC_ERROR", "cli", "main"]


def __getattr__(name: str) -> Any:
    """``occ.cli.database`` and the other server modules, and ``occ.cli.dev`` (the command),
    imported on first use."""
    if name in _SUBMODULES:
        return importlib.import_module(f"occ.cli.{name}")
    if name == "dev":
        return importlib.import_module("occ.cli.processes").dev
    raise AttributeError(f"module 'occ.cli' has no attribute {name!r}")
