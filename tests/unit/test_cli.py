"""The ``occ`` command's options that mirror tables elsewhere (pure: nothing is run)."""

from __future__ import annotations

import click

from occ import cli
from occ.drivers import compute


def test_dev_compute_accepts_every_driver_of_the_table() -> None:
    option = next(param for param in cli.dev.params if param.name == "compute")
    assert isinstance(option.type, click.Choice)
    assert sorted(option.type.choices) == sorted(compute._DRIVERS)
