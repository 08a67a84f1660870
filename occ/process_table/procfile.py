"""The ``Procfile``, written from the process table: one line per process the layout runs."""

from __future__ import annotations

from typing import Final

from occ.process_table import shell, table

HEADER: Final = (
    "Generated from occ/process_table/table.py by `make generate`: change the table, then run it.",
    "web, control, worker and beat wait (bounded: OCC_STARTUP_WAIT_MS) for what release does.",
    "honcho stops every process when one exits: under it, release then stays idle.",
)


def line(run: table.Run) -> str:
    """The command of one process type: its variables, then its command line or script."""
    return " ".join([*(shell.assignment(name, value) for name, value in run.environment), run.text])


def text() -> str:
    """The whole file."""
    lines = [f"# {comment}" for comment in HEADER]
    lines += [f"{run.name}: {line(run)}" for _, run in table.runs(table.Layout.PROCFILE)]
    return "\n".join(lines) + "\n"
