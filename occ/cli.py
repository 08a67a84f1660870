"""The ``occ`` command: database migrations, the development runner and the version.

An entry point like ``web`` and ``tasks``: it reads settings once through
``Settings.from_env()`` and calls the core. Errors of occ (``OccError``) end the command with
one line on stderr and exit code 2; nothing prints a traceback or a connection URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import click
from alembic.util import CommandError
from sqlalchemy import exc as sa_exc

import occ
from occ import errors, schema
from occ.config import Settings

EXIT_OCC_ERROR = 2
"""Exit code of a command that failed with an ``OccError``."""

EXIT_CHECK_FAILED = 1
"""Exit code of ``occ db check`` when the models and the database disagree."""

DEV_NOT_BUILT = (
    "occ dev: the runtime (API, workers, beat) is not built yet; nothing to run. "
    "Use `make test` to run the checks."
)


class OccCommandError(click.ClickException):
    """An ``OccError`` shown as one line: ``occ: error: CODE: detail``."""

    exit_code = EXIT_OCC_ERROR

    def __init__(self, error: errors.OccError) -> None:
        detail = _one_line(error.detail)
        if isinstance(error, errors.InvalidInput) and error.errors:
            detail = "; ".join(f"{field.pointer}: {_one_line(field.message)}"
                               for field in error.errors)
        super().__init__(f"{error.code}: {detail}")

    def show(self, file: Any = None) -> None:
        click.echo(f"occ: error: {self.format_message()}", err=True)


class _OccGroup(click.Group):
    """A group that turns ``OccError`` from any subcommand into ``OccCommandError``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except errors.OccError as error:
            raise OccCommandError(error) from error


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _owner_url() -> str:
    return Settings.from_env().owner_database_url


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"occ: error: {_one_line(message)}", err=True)
    raise click.exceptions.Exit(code)


@click.group(name="occ", cls=_OccGroup)
@click.version_option(occ.__version__, "--version", prog_name="occ",
                      message="%(prog)s %(version)s")
def cli() -> None:
    """OpenClaw Control Plane."""


@cli.group()
def db() -> None:
    """Migrate or check the database schema.

    Connects as the owner: OCC_MIGRATION_DATABASE_URL, else OCC_DATABASE_URL.
    """


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def db_upgrade(revision: str) -> None:
    """Apply the Alembic migrations."""
    url = _owner_url()
    try:
        schema.upgrade(url, revision)
    except sa_exc.OperationalError as exc:
        raise errors.DependencyUnavailable(
            f"the database is unavailable: {_driver_message(exc)}"
        ) from exc
    except CommandError as exc:
        _fail(f"migration failed: {exc}", EXIT_OCC_ERROR)
    click.echo(f"occ db upgrade: database at revision {revision}")


@db.command("check")
def db_check() -> None:
    """Fail (exit 1) if the migrated database and the models disagree."""
    url = _owner_url()
    try:
        schema.check(url)
    except sa_exc.OperationalError as exc:
        raise errors.DependencyUnavailable(
            f"the database is unavailable: {_driver_message(exc)}"
        ) from exc
    except CommandError as exc:
        _fail(f"schema check failed: {exc}", EXIT_CHECK_FAILED)
    click.echo("occ db check: the database matches the models")


@cli.command()
def dev() -> None:
    """Run occ on this machine (not built yet)."""
    click.echo(DEV_NOT_BUILT)


@cli.command()
def version() -> None:
    """Print the occ version."""
    click.echo(f"occ {occ.__version__}")


def _driver_message(exc: sa_exc.DBAPIError) -> str:
    """The first line of the driver's message, without SQLAlchemy's statement dump."""
    text = str(exc.orig) if exc.orig is not None else str(exc)
    lines = text.strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``occ = occ.cli:main``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="occ")
