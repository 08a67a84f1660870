"""The process tables of the documentation, written from the process table.

Each function returns the rows of one table, the header first; cells are Markdown. occ dev's
command lines show their placeholders as ``DEV_SHOWN`` says.
"""

from __future__ import annotations

from typing import Final

from occ.process_table import shell, table
from occ.process_table.table import Layout
from occ.telemetry import metrics_directory

Rows = tuple[tuple[str, ...], ...]
"""A table: its header, then one row per process."""

DEV_SHOWN: Final = {
    "listener_fd": "N",
    "schedule": "<home>/beat-schedule",
    "drivers_pool": table.DRIVER_WORKER.pool,
}
"""How the documentation shows occ dev's placeholders."""


def processes() -> Rows:
    """The README's table: each process, its name in every layout, its command and role."""
    header = ("process", *(layout.value for layout in Layout), "command", "role")
    rows = [
        (
            process.name,
            *(_name(process, layout) for layout in Layout),
            _code(process.command),
            process.role,
        )
        for process in table.PROCESSES
    ]
    return (header, *rows)


def commands(layout: Layout) -> Rows:
    """The processes one layout runs, under its names, with their whole command lines."""
    shown = DEV_SHOWN if layout is Layout.DEV else {}
    header: tuple[str, ...] = ("name", "command")
    if layout is Layout.KUBERNETES:
        header = ("workload", "replicas", "command")
    rows = []
    for _, run in table.runs(layout):
        text = shell.line(run.filled(shown)) if shown else run.text
        replicas = () if layout is not Layout.KUBERNETES else (_replicas(run),)
        rows.append((_code(run.name), *replicas, _code(text)))
    return (header, *rows)


def metrics_directories() -> Rows:
    """Each scraped program's ``PROMETHEUS_MULTIPROC_DIR`` in occ dev, the Procfile and the
    image (occ dev's is ``occ.dev.home``'s, under the home)."""
    header = ("program", "occ dev", "Procfile", "image, compose")
    rows = [
        (
            process.name,
            _code(f"<home>/metrics/{process.runs[Layout.DEV].name}"),
            _code(dict(process.runs[Layout.PROCFILE].environment)[metrics_directory.VARIABLE]),
            _code(table.IMAGE_METRICS),
        )
        for process in table.PROCESSES
        if process.metrics
    ]
    return (header, *rows)


def _name(process: table.Process, layout: Layout) -> str:
    run = process.runs.get(layout)
    if run is not None:
        return _code(run.name)
    return "in-process" if layout is Layout.DEV and process.dev_in_process else "—"


def _replicas(run: table.Run) -> str:
    return "a Job" if run.replicas is None else str(run.replicas)


def _code(text: str) -> str:
    """``text`` as a code span (``|`` is escaped where the table is written)."""
    if "`" in text:
        raise ValueError(f"a backquote in a code span: {text}")
    return f"`{text}`"
