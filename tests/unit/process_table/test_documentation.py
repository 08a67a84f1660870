"""The documentation's process tables: one row per process, each layout's name for it, and the
whole command lines with occ dev's placeholders shown readably."""

from __future__ import annotations

from pathlib import Path

from occ.dev import home
from occ.process_table import documentation, table
from occ.process_table.table import Layout


def test_the_readme_table_names_every_process_in_every_layout() -> None:
    header, *rows = documentation.processes()
    assert header == ("process", "Procfile", "compose", "Kubernetes", "occ dev", "command", "role")
    assert [row[0] for row in rows] == [process.name for process in table.PROCESSES]
    by_name = {row[0]: row for row in rows}
    assert by_name["API"][1:5] == ("`web`", "`api`", "`occ-api`", "`api`")
    assert by_name["release"][4] == "in-process"
    assert by_name["Flower"][3:5] == ("—", "—")
    assert by_name["driver worker"][5] == f"`{table.DRIVERS.command}`"


def test_occ_devs_commands_show_their_placeholders() -> None:
    header, *rows = documentation.commands(Layout.DEV)
    assert header == ("name", "command")
    commands = {name: command for name, command in rows}
    assert "--bind fd://N " in commands["`api`"]
    assert '--schedule "<home>/beat-schedule"' in commands["`beat`"]
    assert f"-P {table.DRIVER_WORKER.pool} " in commands["`drivers`"]
    assert not any("{" in command for command in commands.values())


def test_the_kubernetes_table_gives_replicas_and_the_job() -> None:
    header, *rows = documentation.commands(Layout.KUBERNETES)
    assert header == ("workload", "replicas", "command")
    replicas = {row[0]: row[1] for row in rows}
    assert replicas == {
        f"`{run.name}`": "a Job" if run.replicas is None else str(run.replicas)
        for _, run in table.runs(Layout.KUBERNETES)
    }
    assert replicas["`occ-migrate`"] == "a Job"


def test_a_script_is_shown_as_the_script() -> None:
    _, *rows = documentation.commands(Layout.COMPOSE)
    assert {name: command for name, command in rows}[
        "`migrate`"
    ] == f"`{table.RELEASE.runs[Layout.COMPOSE].text}`"


def test_the_metrics_table_gives_each_scraped_program_its_directories() -> None:
    header, *rows = documentation.metrics_directories()
    assert header == ("program", "occ dev", "Procfile", "image, compose")
    assert [row[0] for row in rows] == ["API", "control worker", "driver worker", "beat"]
    layout = home.Home(Path("<home>"))
    for process, row in zip(
        [table.API, table.CONTROL, table.DRIVERS, table.BEAT], rows, strict=True
    ):
        assert row[1] == f"`{layout.metrics_dir(process.runs[Layout.DEV].name)}`"
        assert row[2] == f"`{table.PROCFILE_METRICS}/{process.runs[Layout.PROCFILE].name}`"
        assert row[3] == f"`{table.IMAGE_METRICS}`"
