"""``occ doctor``: what makes this process's settings weaker than production needs.

Reads the settings as every process does (``Settings.from_env``, but an unset ``OCC_ENV`` is
listed rather than refused) and prints one line per weakness (``Settings.weaknesses``), each
naming its variable and never its value; exits 1 when it found any, 0 when none, and 2 when the
settings are invalid or ``OCC_ENV`` is unset (as every process would refuse them at start-up).
"""

from __future__ import annotations

import click

from occ.cli import base
from occ.foundation import errors
from occ.settings import sources as settings_sources
from occ.settings.config import Settings


@click.command()
def doctor() -> None:
    """List what is weak in this process's settings (exit 1 when anything is)."""
    try:
        settings = Settings.from_env(require=False)
    except errors.OccError as exc:
        raise base.OccCommandError(exc) from None
    variables = settings_sources.variables(Settings)
    found = settings.weaknesses()
    for weakness in found:
        field = str(weakness.path[0])
        variable = variables[field].name if field in variables else field
        click.echo(f"weak: {variable} {weakness.message}")
    if settings.platform is not None:
        click.echo("platform: detected (OCC_PLATFORM or DYNO): development keys are refused")
    if "environment" not in settings.model_fields_set:
        raise click.exceptions.Exit(base.EXIT_OCC_ERROR)
    if found:
        raise click.exceptions.Exit(base.EXIT_CHECK_FAILED)
    click.echo("occ doctor: nothing weak found")
