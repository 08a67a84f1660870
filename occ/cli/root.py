"""The ``occ`` group: the REST client's commands, and the server's, loaded only when run.

``occ`` starts in the time of Python, click and the client: the client's commands
(``occ.client``) import neither the core nor SQLAlchemy, Alembic, Celery, Flask or kombu, and
each server command (migrations, bootstrap, the processes, the stand-in gateway, the
Kubernetes access) is named in ``SERVER_COMMANDS`` with its module and one-line help, so
``occ --help`` lists it without importing it and only the command being run is loaded. An
error of occ (``OccError``) from any command ends as one line on stderr with exit code 2.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import click

import occ
from occ.client import commands as client_commands
from occ.foundation import errors

CONTEXT: Final = {"help_option_names": ["-h", "--help"]}
"""Every command takes ``-h`` as well as ``--help`` (children inherit it)."""


@dataclass(frozen=True)
class Lazy:
    """A server command: the module that declares it, its name there, its one-line help."""

    module: str
    attribute: str
    summary: str

    def load(self) -> click.Command:
        command = getattr(importlib.import_module(self.module), self.attribute)
        assert isinstance(command, click.Command), self
        return command


SERVER_COMMANDS: Final = {
    "api": Lazy(
        "occ.cli.processes",
        "api",
        "Run the HTTP API under gunicorn (further arguments go to gunicorn).",
    ),
    "beat": Lazy(
        "occ.cli.processes",
        "beat",
        "Run Celery beat with the in-memory scheduler (one is enough; two are harmless).",
    ),
    "bootstrap": Lazy(
        "occ.cli.database",
        "bootstrap",
        "Create the Installation, its administrator Role and principal, and a first API key.",
    ),
    "db": Lazy("occ.cli.database", "db", "Migrate or check the database schema."),
    "dev": Lazy(
        "occ.cli.processes",
        "dev",
        "Run the API, both workers and beat on this machine, with embedded services.",
    ),
    "docker": Lazy("occ.cli.docker", "docker", "Helpers of the docker Compute Driver."),
    "doctor": Lazy(
        "occ.cli.doctor",
        "doctor",
        "List what is weak in this process's settings (exit 1 when anything is).",
    ),
    "gateway": Lazy(
        "occ.cli.processes",
        "gateway",
        "Run the stand-in gateway of one revision (what the local Compute Driver starts).",
    ),
    "kubernetes": Lazy(
        "occ.cli.kubernetes",
        "kubernetes",
        "Provision and verify the kubernetes Compute Driver's access.",
    ),
    "worker": Lazy(
        "occ.cli.processes",
        "worker",
        "Run a Celery worker (further arguments, such as -E or setting=value, go to Celery).",
    ),
}
"""What ``occ --help`` shows of each server command (tests/unit/cli checks it against the
command's own help)."""


SERVER_SUBCOMMANDS: Final = {
    ("audit", "export"): Lazy(
        "occ.cli.audit_archive",
        "export",
        "Export the audit events before a date as JSON Lines, in sequence order.",
    ),
    ("audit", "drop-partition"): Lazy(
        "occ.cli.audit_archive",
        "drop_partition",
        "Drop the audit log's months that end by a date, once exported.",
    ),
}
"""Server commands inside a client group (``occ audit export``), loaded only when run."""


class LazyCommand(click.Command):
    """A server command inside a client group: its help line from its ``Lazy``, the command
    itself loaded when it runs (or shows its help)."""

    def __init__(self, name: str, lazy: Lazy) -> None:
        super().__init__(name, help=lazy.summary)
        self.lazy = lazy

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        return self.lazy.load().make_context(info_name, args, parent=parent, **extra)


class RootGroup(click.Group):
    """``occ``: loads a server command when it is asked for; turns ``OccError`` into one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *SERVER_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in SERVER_COMMANDS:
            self.add_command(SERVER_COMMANDS[cmd_name].load(), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))  # as click cuts a command's help
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                command = click.Command(name, help=SERVER_COMMANDS[name].summary)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except errors.OccError as error:
            # only the server's commands raise these, and their modules have loaded base
            base = importlib.import_module("occ.cli.base")
            raise base.OccCommandError(error) from error


@click.group(name="occ", cls=RootGroup, context_settings=CONTEXT)
@click.version_option(occ.__version__, "--version", prog_name="occ", message="%(prog)s %(version)s")
def cli() -> None:
    """OpenClaw Control Plane."""


@cli.command()
def version() -> None:
    """Print the occ version."""
    click.echo(f"occ {occ.__version__}")


client_commands.register(cli)  # login, namespaces, agents, ...: the REST API's client
for (_group, _name), _lazy in SERVER_SUBCOMMANDS.items():
    _parent = cli.commands[_group]
    assert isinstance(_parent, click.Group)
    _parent.add_command(LazyCommand(_name, _lazy))


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``occ = occ.cli:main``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="occ")
