"""The Procfile written from the table: its header, one line per process, and what a shell
running each line starts (stand-in ``gunicorn``, ``celery`` and ``occ`` programs record their
arguments and environment)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from occ.process_table import procfile, table
from occ.process_table.table import Layout
from occ.telemetry import metrics_directory

RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD"], "a") as record:
    record.write(json.dumps({{
        "argv": sys.argv,
        "metrics": os.environ.get("{variable}"),
        "remap": os.environ.get("REMAP_SIGTERM"),
        "flower_auth": os.environ.get("FLOWER_BASIC_AUTH"),
    }}) + "\\n")
"""
ENVIRONMENT = {"PORT": "5000", "FLOWER_BASIC_AUTH": "admin:secret words"}


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    """A directory of stand-in programs that record how they were started."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for name in ("gunicorn", "celery", "occ"):
        program = directory / name
        text = RECORDER.format(python=sys.executable, variable=metrics_directory.VARIABLE)
        program.write_text(text)
        program.chmod(0o755)
    return directory


def _started(line: str, programs: Path, tmp_path: Path) -> list[dict[str, Any]]:
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    env = {"PATH": f"{programs}{os.pathsep}{os.defpath}", "RECORD": str(record), **ENVIRONMENT}
    subprocess.run(["sh", "-c", line], env=env, check=True, timeout=30)
    return [json.loads(entry) for entry in record.read_text().splitlines()]


def test_the_file_is_the_header_then_one_line_per_process_in_the_tables_order() -> None:
    lines = procfile.text().splitlines()
    assert lines[: len(procfile.HEADER)] == [f"# {comment}" for comment in procfile.HEADER]
    entries = [line.partition(": ")[0] for line in lines[len(procfile.HEADER) :]]
    assert entries == [run.name for _, run in table.runs(Layout.PROCFILE)]
    assert procfile.text().endswith("\n")


@pytest.mark.parametrize(
    "process", [table.API, table.CONTROL, table.DRIVERS, table.BEAT, table.FLOWER],
    ids=lambda process: process.name,
)  # fmt: skip
def test_a_shell_starts_the_tables_command_with_its_variables(
    process: table.Process, programs: Path, tmp_path: Path
) -> None:
    run = process.runs[Layout.PROCFILE]
    [started] = _started(procfile.line(run), programs, tmp_path)
    # a shell script's program is what it execs
    argv = shlex.split(run.text.rpartition("exec ")[2]) if run.argv[:2] == table.SHELL else run.argv
    expected = [arg.replace("$PORT", ENVIRONMENT["PORT"]) for arg in argv]
    assert [Path(started["argv"][0]).name, *started["argv"][1:]] == expected
    assert ENVIRONMENT["FLOWER_BASIC_AUTH"] not in " ".join(started["argv"])
    if process is table.FLOWER:  # Flower reads its credentials from its environment
        assert started["flower_auth"] == ENVIRONMENT["FLOWER_BASIC_AUTH"]
    # each scraped program in a directory of its own under the default base
    assert started["metrics"] == (f"/tmp/occ-metrics/{run.name}" if process.metrics else None)
    assert started["remap"] == dict(run.environment).get("REMAP_SIGTERM")


def test_release_migrates_then_bootstraps_and_ends_outside_honcho(
    programs: Path, tmp_path: Path
) -> None:
    started = _started(procfile.line(table.RELEASE.runs[Layout.PROCFILE]), programs, tmp_path)
    assert [entry["argv"][1:] for entry in started] == [
        ["db", "upgrade"],
        ["bootstrap", "--if-missing"],
    ]
