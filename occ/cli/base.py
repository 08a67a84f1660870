"""What the server's commands share: the one-line error and exit codes.

Commands live in their subject's module (``database``, ``processes``, ``kubernetes``, and the
REST client in ``occ.client``); the group is ``occ.cli.root``. Nothing here calls the core.
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from occ.foundation import errors
from occ.settings.config import Settings
from occ.web import problems

EXIT_OCC_ERROR = 2
"""Exit code of a command that failed with an ``OccError``."""

EXIT_CHECK_FAILED = 1
"""Exit code of ``occ db check`` when the models and the database disagree."""


class OccCommandError(click.ClickException):
    """An ``OccError`` shown as one line: ``occ: error: CODE: detail``."""

    exit_code = EXIT_OCC_ERROR

    def __init__(self, error: errors.OccError) -> None:
        detail = one_line(error.detail)
        if isinstance(error, errors.InvalidInput) and error.errors:
            # a use case's fields are named as the API names them; settings keys as written
            detail = "; ".join(
                f"{problems.pointer(error, field)}: {one_line(field.message)}"
                for field in error.errors
            )
        super().__init__(f"{error.code}: {detail}")

    def show(self, file: Any = None) -> None:
        click.echo(f"occ: error: {self.format_message()}", err=True)


def one_line(text: str) -> str:
    return " ".join(text.split())


def owner_url() -> str:
    return Settings.from_env().owner_database_url


def fail(message: str, code: int) -> NoReturn:
    click.echo(f"occ: error: {one_line(message)}", err=True)
    raise click.exceptions.Exit(code)
