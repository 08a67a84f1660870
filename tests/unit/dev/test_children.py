"""occ dev's children come from the process table's ``occ dev`` runs: the names, the command
lines (placeholders filled, run by this interpreter), the pool on a polling broker, and what
only the API or only the workers get."""

from __future__ import annotations

import sys
from pathlib import Path

from occ.dev import children, fleet, home
from occ.process_table import table
from occ.process_table.table import Layout
from occ.settings import sources
from occ.settings.config import Settings
from occ.tasks import lifecycle

REDIS = {"OCC_BROKER_URL": "redis://127.0.0.1:6379/0"}
LISTENER_FD = 7


def _specs(tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, fleet.ChildSpec]:
    specs = children.specs(
        layout=home.Home(tmp_path), env=env or REDIS, cwd=tmp_path, listener_fd=LISTENER_FD
    )
    return {spec.name: spec for spec in specs}


def _without_control_socket(argv: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(arg for arg in argv if arg != "--no-control-socket")


def test_the_children_are_the_tables_occ_dev_runs_in_order(tmp_path: Path) -> None:
    assert list(_specs(tmp_path)) == [run.name for _, run in table.runs(Layout.DEV)]
    assert children.WORKERS == (children.CONTROL, children.DRIVERS)


def test_each_command_line_is_the_tables_run_by_this_interpreter(tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    values = {
        "listener_fd": str(LISTENER_FD),
        "schedule": str(tmp_path / "beat-schedule"),
        "drivers_pool": table.DRIVER_WORKER.pool,
    }
    for _, run in table.runs(Layout.DEV):
        argv = _without_control_socket(specs[run.name].argv)
        assert argv == (sys.executable, "-m", *run.filled(values)), run.name


def test_only_workers_send_task_events_and_only_when_asked(tmp_path: Path) -> None:
    quiet = _specs(tmp_path)
    evented = {
        spec.name: spec
        for spec in children.specs(
            layout=home.Home(tmp_path),
            env=REDIS,
            cwd=tmp_path,
            listener_fd=LISTENER_FD,
            task_events=True,
        )
    }
    for name, spec in evented.items():
        assert table.TASK_EVENTS not in quiet[name].argv, name
        wanted = name in children.WORKERS
        assert (spec.argv[-1] == table.TASK_EVENTS) is wanted, name


def test_a_polling_broker_gives_the_driver_worker_the_threads_pool(tmp_path: Path) -> None:
    for broker, pool in (("filesystem://", "threads"), ("redis://h:6379/0", "prefork")):
        argv = _specs(tmp_path, {"OCC_BROKER_URL": broker})[children.DRIVERS].argv
        assert argv[argv.index("-P") + 1] == pool, broker


def test_only_the_api_inherits_the_listener_and_only_workers_have_markers(
    tmp_path: Path,
) -> None:
    specs = _specs(tmp_path)
    layout = home.Home(tmp_path)
    for name, spec in specs.items():
        assert spec.pass_fds == ((LISTENER_FD,) if name == children.API else ()), name
        is_worker = name in children.WORKERS
        assert (spec.marker == layout.marker(name)) if is_worker else spec.marker is None
        assert spec.env.get("OCC_WORKER_READINESS_PATH") == (
            str(layout.marker(name)) if is_worker else None
        )
    assert specs[children.API].startup_failure_statuses == children.GUNICORN_STARTUP_FAILURES
    for name in (*children.WORKERS, children.BEAT):
        assert specs[name].startup_failure_statuses == {lifecycle.EXIT_NOT_READY}, name


def test_the_api_gets_no_control_socket_from_the_gunicorn_that_has_one(tmp_path: Path) -> None:
    argv = _specs(tmp_path)[children.API].argv
    has_one = children.package_version("gunicorn") >= (25, 1)
    assert ("--no-control-socket" in argv) is has_one


def test_relative_paths_of_this_machine_are_anchored_where_occ_dev_started() -> None:
    started_in = Path("/home/dev/project")
    env = {
        "OCC_CONFIG_PATH": "occ.yaml",
        "OCC_KUBERNETES_KUBECONFIG": "../kube/config",
        "OCC_SECRET_KEY_FILE": "secrets/key",
        "OCC_ACCOUNT_BACKEND_ROOT": "/srv/accounts",
        "OCC_SSH_ROOT": "var/occ",  # a path on the SSH hosts
        "OCC_WORKER_READINESS_PATH": "",
        "HOME_FILE": "notes",  # not occ's
    }
    assert children.anchored(env, started_in) == {
        "OCC_CONFIG_PATH": "/home/dev/project/occ.yaml",
        "OCC_KUBERNETES_KUBECONFIG": "/home/dev/project/../kube/config",
        "OCC_SECRET_KEY_FILE": "/home/dev/project/secrets/key",
        "OCC_ACCOUNT_BACKEND_ROOT": "/srv/accounts",
        "OCC_SSH_ROOT": "var/occ",
        "OCC_WORKER_READINESS_PATH": "",
        "HOME_FILE": "notes",
    }


def test_every_settings_variable_that_names_a_path_is_placed() -> None:
    named = {
        variable.name
        for variable in sources.variables(Settings).values()
        if variable.name.endswith(("_PATH", "_ROOT", "_KUBECONFIG", "_DIR"))
    }
    # OCC_CONFIG_PATH names the settings file itself, read before any setting
    assert named | {"OCC_CONFIG_PATH"} == children.LOCAL_PATHS | {"OCC_SSH_ROOT"}
