"""The ``occ`` command: database migrations and bootstrap, occ's processes, the stand-in
gateway, the REST client, and the version.

An entry point like ``web`` and ``tasks``: it reads settings once through
``Settings.from_env()`` and calls the core. Errors of occ (``OccError``) end the command with
one line on stderr and exit code 2; nothing prints a traceback or a connection URL.
"""

from __future__ import annotations

import os  # noqa: F401 - tests replace os.execv through this module
from collections.abc import Sequence

import click

import occ
from occ.cli import base, database, kubernetes, processes
from occ.client import commands as client_commands

cli = base.cli
EXIT_OCC_ERROR = base.EXIT_OCC_ERROR
dev = processes.dev

__all__ = ["EXIT_OCC_ERROR", "cli", "database", "dev", "kubernetes", "main", "processes"]


@cli.command()
def version() -> None:
    """Print the occ version."""
    click.echo(f"occ {occ.__version__}")


client_commands.register(cli)  # login, namespaces, agents, ...: the REST API's client


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``occ = occ.cli:main``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="occ")
