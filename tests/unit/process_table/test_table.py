"""The process table holds together: every layout names each process once, every command line
holds the process's command, workers consume their queue on their pool under their node name,
the API always runs occ's hooks and classes, and occ dev's placeholders are all filled."""

from __future__ import annotations

import re

import pytest

from occ.process_table import shell, table
from occ.process_table.table import Layout
from occ.tasks import names
from occ.telemetry import metrics_directory
from occ.web import gunicorn_hooks, serving

HEROKU_GRACE_S = 30
DEV_VALUES = {"listener_fd": "3", "schedule": "/home/beat-schedule", "drivers_pool": "threads"}
DEV_SHOWN = {**DEV_VALUES, "drivers_pool": table.DRIVER_WORKER.pool}


def _option(argv: tuple[str, ...], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize("layout", list(Layout))
def test_each_layout_names_each_of_its_processes_once(layout: Layout) -> None:
    runs = table.runs(layout)
    assert runs, layout
    run_names = [run.name for _, run in runs]
    assert len(set(run_names)) == len(run_names)
    for process, run in runs:
        assert table.named(layout, run.name) is process


def test_named_refuses_a_name_the_layout_does_not_use() -> None:
    with pytest.raises(KeyError, match="no process named flower"):
        table.named(Layout.DEV, "flower")


def test_the_procfile_runs_every_process_and_occ_dev_every_long_running_one() -> None:
    procfile = [process for process, _ in table.runs(Layout.PROCFILE)]
    assert procfile == [process for process in table.PROCESSES if process is not table.LOG_GATE]
    # compose alone keeps the engine's socket from its API
    assert [run.name for _, run in table.runs(Layout.COMPOSE)][-1] == "docker-log-gate"
    assert list(table.LOG_GATE.runs) == [Layout.COMPOSE]
    in_dev = [process for process, _ in table.runs(Layout.DEV)]
    assert in_dev == [table.API, table.CONTROL, table.DRIVERS, table.BEAT]
    assert table.RELEASE.dev_in_process  # the migration and bootstrap, before the children


@pytest.mark.parametrize("process", table.PROCESSES, ids=lambda process: process.name)
def test_every_command_line_but_the_wrappers_holds_the_process_command(
    process: table.Process,
) -> None:
    for layout, run in process.runs.items():
        if layout is Layout.KUBERNETES:  # occ's wrappers: checked where they run
            continue
        text = shell.line(run.filled(DEV_SHOWN)) if layout is Layout.DEV else run.text
        assert process.command in text, (layout, text)


def test_only_occ_devs_command_lines_have_placeholders() -> None:
    for process in table.PROCESSES:
        for layout, run in process.runs.items():
            if layout is not Layout.DEV:
                assert run.filled({}) == run.argv, (process.name, layout)


def test_a_shell_script_runs_as_sh_c_and_its_text_is_the_script() -> None:
    run = table.RELEASE.runs[Layout.KUBERNETES]
    assert run.argv == ("sh", "-c", table.RELEASE_STEPS)
    assert run.text == table.RELEASE_STEPS


@pytest.mark.parametrize("process", [table.CONTROL, table.DRIVERS], ids=["control", "drivers"])
def test_workers_consume_their_queue_on_their_pool_under_their_node_name(
    process: table.Process,
) -> None:
    worker = process.worker
    assert worker is not None
    for layout, run in process.runs.items():
        argv = run.filled(DEV_VALUES)
        if layout is Layout.KUBERNETES:
            assert (_option(argv, "--queues"), _option(argv, "--pool")) == (
                worker.queue,
                worker.pool,
            )
            continue
        assert _option(argv, "-Q") == worker.queue, layout
        expected_pool = "threads" if layout is Layout.DEV and worker.pool == "prefork" else None
        assert _option(argv, "-P") == (expected_pool or worker.pool), layout
        assert _option(argv, "-n") == f"{worker.node}@%h", layout
    assert table.worker_nodes()[worker.queue] == worker.node


def test_the_two_workers_split_the_queues() -> None:
    assert table.worker_nodes() == {names.CONTROL_QUEUE: "control", names.DRIVER_QUEUE: "drivers"}


def test_every_api_command_line_runs_occs_hooks_and_classes() -> None:
    for layout, run in table.API.runs.items():
        if layout is Layout.KUBERNETES:
            assert run.argv[:2] == ("occ", "api")  # the wrapper adds them
            continue
        argv = run.argv
        assert argv[: len(table.GUNICORN)] == table.GUNICORN, layout
        assert _option(argv, "--config") == gunicorn_hooks.CONFIG_OPTION
        assert _option(argv, "--worker-class") == serving.WORKER_CLASS
        assert _option(argv, "--logger-class") == serving.LOGGER_CLASS
        assert "--preload" not in argv  # the start-up wait runs once, in the master


def test_production_shutdowns_end_before_herokus_sigkill() -> None:
    graceful = _option(table.API.runs[Layout.PROCFILE].argv, "--graceful-timeout")
    assert graceful is not None and float(graceful) < HEROKU_GRACE_S
    for layout in (Layout.PROCFILE, Layout.COMPOSE, Layout.KUBERNETES):
        [window] = [
            arg
            for arg in table.DRIVERS.runs[layout].argv
            if arg.startswith("worker_soft_shutdown_timeout=")
        ]
        assert 0 < float(window.partition("=")[2]) <= HEROKU_GRACE_S - 5, layout


def test_only_herokus_driver_worker_remaps_sigterm() -> None:
    for process in table.PROCESSES:
        for layout, run in process.runs.items():
            remapped = ("REMAP_SIGTERM", "SIGQUIT") in run.environment
            assert remapped is (process is table.DRIVERS and layout is Layout.PROCFILE)
            if layout is not Layout.PROCFILE:
                assert run.environment == (), "only Procfile lines set variables"


def test_each_scraped_program_has_its_own_procfile_metrics_directory() -> None:
    directories = {}
    for process, run in table.runs(Layout.PROCFILE):
        values = dict(run.environment)
        assert (metrics_directory.VARIABLE in values) is process.metrics, process.name
        if process.metrics:
            directories[process.name] = values[metrics_directory.VARIABLE]
    assert len(set(directories.values())) == len(directories) == 4
    assert all(d.startswith(f"{table.PROCFILE_METRICS}/") for d in directories.values())


def test_occ_devs_placeholders_are_all_filled() -> None:
    used = set()
    for _, run in table.runs(Layout.DEV):
        used |= {m for arg in run.argv for m in re.findall(r"\{(\w+)\}", arg)}
        assert not any("{" in arg for arg in run.filled(DEV_VALUES)), run.name
    assert used == set(table.DEV_PLACEHOLDERS)


def test_a_placeholder_without_a_value_is_an_error() -> None:
    with pytest.raises(KeyError, match="listener_fd"):
        table.API.runs[Layout.DEV].filled({})


def test_kubernetes_runs_deployments_with_replicas_and_the_release_as_a_job() -> None:
    for process, run in table.runs(Layout.KUBERNETES):
        if process is table.RELEASE:
            assert run.replicas is None
        else:
            assert run.replicas is not None and run.replicas >= 1, run.name
    assert table.BEAT.runs[Layout.KUBERNETES].replicas == 1  # one schedule is enough
