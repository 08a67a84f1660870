"""The deployment files keep occ's process shapes (docs/running.md; no Docker engine needed).

Parses ``Procfile``, ``docker-compose.yml`` and ``Dockerfile`` and checks the commands (compose's
and the image's against the process table; the Procfile is written from it and checked by
``tests/unit/scripts/test_generate.py``), the Heroku shutdown settings, Flower's authentication,
the compose dependencies and secrets files (the owner's URL for ``migrate`` only) and the thin
``occ`` wrappers.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from occ import cli
from occ.dev import children, home
from occ.process_table import table
from occ.process_table.table import Layout
from occ.web import gunicorn_hooks, serving

ROOT = Path(__file__).resolve().parents[2]
HEROKU_GRACE_S = 30
APP_SERVICES = ("api", "control", "worker", "beat", "flower")
RELEASE_IDLE_STEP = 'if [ -n "$HONCHO_PROCESS_NAME" ]; then exec tail -f /dev/null; fi'


def _procfile() -> dict[str, list[str]]:
    processes: dict[str, list[str]] = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, command = line.partition(":")
        assert sep and re.fullmatch(r"[a-z][a-z0-9_-]*", name), line
        assert name not in processes, f"process type {name} twice"
        # each program's metrics directory aside (tests/unit/test_metrics_layout.py)
        words = shlex.split(command)
        processes[name] = [w for w in words if not w.startswith("PROMETHEUS_MULTIPROC_DIR=")]
    return processes


@functools.cache  # parsed once: the tests only read it
def _compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(document, dict)
    return document


def _option(argv: list[str], *names: str) -> str | None:
    """The value of an option given as ``-X value``, ``--x value`` or ``--x=value``."""
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
    return None


def _celery(argv: list[str], subcommand: str) -> list[str]:
    """``argv`` from ``celery`` on, checked to load occ's app and run ``subcommand``."""
    start = argv.index("celery")
    assert argv[start : start + 3] == ["celery", "-A", "occ.tasks.app"], argv
    assert argv[start + 3] == subcommand, argv
    return argv[start:]


def _soft_shutdown(argv: list[str]) -> float | None:
    for arg in argv:
        if arg.startswith("worker_soft_shutdown_timeout="):
            return float(arg.split("=", 1)[1])
    return None


# -- Procfile -----------------------------------------------------------------------------------


def test_procfile_has_the_process_types_of_the_design() -> None:
    assert set(_procfile()) == {"release", "web", "control", "worker", "beat", "flower"}


def _procfile_line(name: str) -> str:
    """The command of process type ``name`` as written (a shell command line)."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.partition(":")[2].strip()
    raise AssertionError(f"no {name} in the Procfile")


def test_release_migrates_then_bootstraps_if_missing() -> None:
    steps = _procfile_line("release").split(" && ")
    assert steps[0] == "occ db upgrade"
    assert shlex.split(steps[1])[:3] == ["occ", "bootstrap", "--if-missing"]


def test_release_stays_idle_only_under_honcho() -> None:
    # honcho stops every process when one exits; Heroku's release phase must end (the step is
    # run in tests/integration/deploy/test_deploy_scripts.py)
    steps = _procfile_line("release").split(" && ")
    assert steps[2:] == [RELEASE_IDLE_STEP]


def test_web_serves_the_app_factory_on_port() -> None:
    argv = _procfile()["web"]
    assert argv[:2] == ["gunicorn", "occ.web.app:create_app()"]
    assert _option(argv, "--worker-class", "-k") == serving.WORKER_CLASS
    assert _option(argv, "--bind", "-b") == "0.0.0.0:$PORT"
    graceful = _option(argv, "--graceful-timeout")
    assert graceful is not None and float(graceful) < HEROKU_GRACE_S


def test_web_waits_for_the_database_in_gunicorns_master() -> None:
    # the wait runs in on_starting, once, before any worker (whose boot the timeout bounds)
    assert _option(_procfile()["web"], "--config", "-c") == gunicorn_hooks.CONFIG_OPTION
    assert f"python:{gunicorn_hooks.__name__}" == gunicorn_hooks.CONFIG_OPTION
    assert callable(gunicorn_hooks.on_starting)
    assert "--preload" not in _procfile()["web"]


def test_control_runs_threads_on_the_control_queue_with_warm_shutdown() -> None:
    argv = _celery(_procfile()["control"], "worker")
    assert _option(argv, "-Q", "--queues") == "occ.control"
    assert _option(argv, "-P", "--pool") == "threads"
    assert (_option(argv, "-n", "--hostname") or "").startswith("control@")
    # one process: Heroku's SIGTERM reaches only the main process, warm shutdown is right
    assert not any(arg.startswith("REMAP_SIGTERM=") for arg in _procfile()["control"])


def test_worker_runs_prefork_on_the_driver_queue_with_heroku_shutdown() -> None:
    full = _procfile()["worker"]
    assert full[0] == "REMAP_SIGTERM=SIGQUIT", "Heroku signals every process of the dyno"
    argv = _celery(full, "worker")
    assert _option(argv, "-Q", "--queues") == "occ.drivers"
    assert _option(argv, "-P", "--pool") == "prefork"
    assert (_option(argv, "-n", "--hostname") or "").startswith("drivers@")
    assert "-E" in argv or "--task-events" in argv, "Flower needs task events"
    window = _soft_shutdown(argv)
    assert window is not None and 0 < window <= HEROKU_GRACE_S - 5, (
        "a soft-shutdown window that ends before Heroku's SIGKILL"
    )


def test_no_process_uses_the_solo_pool() -> None:
    for name, argv in _procfile().items():
        assert _option(argv, "-P", "--pool") != "solo", name


def test_beat_uses_the_in_memory_scheduler() -> None:
    argv = _celery(_procfile()["beat"], "beat")
    assert _option(argv, "-S", "--scheduler") == "celery.beat:Scheduler"


def test_flower_binds_port_read_only() -> None:
    argv = _celery(_procfile()["flower"], "flower")
    assert _option(argv, "--port") == "$PORT"
    assert "--read-only" in argv


def test_flower_takes_its_credentials_from_the_environment_never_its_command_line() -> None:
    words = _procfile()["flower"]
    guard, exec_ = words[:3], words[3:]
    assert guard[0] == ":" and guard[2] == "&&", words  # the shell checks the variable first
    assert re.fullmatch(r"\$\{FLOWER_BASIC_AUTH:\?[^}]+\}", guard[1])
    assert exec_[0] == "exec"
    assert _option(_celery(exec_, "flower"), "--basic-auth") is None


def test_flower_refuses_to_start_without_credentials() -> None:
    # the shell stops at the expansion, before celery runs
    result = subprocess.run(
        ["sh", "-c", _procfile_line("flower")],
        env={"PATH": os.defpath, "PORT": "5555"},
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode != 0
    assert "FLOWER_BASIC_AUTH" in result.stderr


# -- docker-compose.yml -------------------------------------------------------------------------


def _services() -> dict[str, Any]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


def _command(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


def test_compose_has_the_production_services() -> None:
    assert set(_services()) >= {"postgres", "redis", "migrate", *APP_SERVICES}


def test_compose_databases_have_healthchecks() -> None:
    services = _services()
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    for name in ("postgres", "redis"):
        assert services[name]["healthcheck"]["test"], name
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "ping" in services["redis"]["healthcheck"]["test"]


def test_compose_migrate_is_a_one_shot_upgrade_and_bootstrap() -> None:
    migrate = _services()["migrate"]
    script = _command(migrate)
    assert script[:2] == ["sh", "-c"]
    assert script[2] == (
        "occ db upgrade && occ bootstrap --if-missing --key-file /run/occ/admin.key"
    )
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in migrate["volumes"]}
    assert mounts["/run/occ"] in _compose()["volumes"], "the admin key lives in a named volume"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_compose_app_services_wait_for_healthy_services_and_migrate(name: str) -> None:
    service = _services()[name]
    depends = service["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert depends["migrate"]["condition"] == "service_completed_successfully"


OCC_SECRETS = {
    "OCC_DATABASE_URL": "database_url",
    "OCC_API_KEY_PEPPER": "api_key_pepper",
    "OCC_SECRET_KEY": "secret_key",
}


def _secret_files(service: dict[str, Any]) -> dict[str, str]:
    """The ``*_FILE`` variables of ``service``, each checked to name one of its secrets."""
    files = {}
    for variable, path in service["environment"].items():
        if variable.endswith("_FILE"):
            directory, _, secret = path.rpartition("/")
            assert directory == "/run/secrets" and secret in service["secrets"], (variable, path)
            files[variable.removesuffix("_FILE")] = secret
    return files


@pytest.mark.parametrize("name", ["migrate", *APP_SERVICES])
def test_compose_occ_services_use_the_image_and_read_secrets_from_files(name: str) -> None:
    services = _services()
    service = services[name]
    assert service["image"] == services["migrate"]["image"]
    assert service["build"]["context"] == "."
    environment = service["environment"]
    assert environment["OCC_BROKER_URL"].startswith("redis://redis:")
    assert environment["OCC_ENV"] == "${OCC_ENV:-production}"  # processes refuse it unset
    files = _secret_files(service)
    for variable, secret in OCC_SECRETS.items():
        assert variable not in environment, f"{variable} in {name}'s environment"
        assert files[variable] == secret, variable


def test_compose_gives_the_owner_url_to_migrate_only() -> None:
    services = _services()
    assert _secret_files(services["migrate"])["OCC_MIGRATION_DATABASE_URL"] == (
        "migration_database_url"
    )
    for name, service in services.items():
        if name == "migrate":
            continue
        assert "migration_database_url" not in service.get("secrets", []), name
        assert not any(
            variable.startswith("OCC_MIGRATION_DATABASE_URL")
            for variable in service.get("environment") or {}
        ), name


def test_compose_secrets_are_files_of_the_secrets_directory() -> None:
    # scripts/compose-secrets.sh is run in tests/integration/deploy/test_deploy_scripts.py
    document = _compose()
    declared = document["secrets"]
    assert all(entry == {"file": f"./secrets/{name}"} for name, entry in declared.items())
    used = {secret for service in _services().values() for secret in service.get("secrets", [])}
    assert used == set(declared)
    header = (ROOT / "docker-compose.yml").read_text().split("\nname:", 1)[0]
    for name in declared:
        assert f"#   {name} " in header, f"{name} is not documented in the header"
    # no secret value in the file itself (and none from .env)
    for service in _services().values():
        for variable in service.get("environment") or {}:
            assert not variable.endswith(("PASSWORD", "PEPPER", "SECRET_KEY", "BASIC_AUTH")), (
                variable
            )


def test_compose_postgres_reads_its_passwords_from_secrets() -> None:
    postgres = _services()["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert set(postgres["secrets"]) == {"postgres_password", "occ_app_db_password"}
    script = _compose()["configs"]["occ-app-role"]["content"]
    assert "/run/secrets/occ_app_db_password" in script


def test_compose_flower_requires_its_credentials_from_the_secret() -> None:
    flower = _services()["flower"]
    script = _command(flower)
    assert script[:2] == ["sh", "-c"]
    steps = [shlex.split(step) for step in script[2].split(" && ")]
    assert steps[0] == ["FLOWER_BASIC_AUTH=$$(cat /run/secrets/flower_basic_auth)"]
    assert steps[1][0] == ":" and re.fullmatch(r"\$\$\{FLOWER_BASIC_AUTH:\?[^}]+\}", steps[1][1])
    assert steps[2] == ["export", "FLOWER_BASIC_AUTH"]
    assert steps[3][0] == "exec"
    argv = _celery(steps[3][1:], "flower")
    assert "--read-only" in argv
    assert _option(argv, "--basic-auth") is None  # never on the command line
    assert "flower_basic_auth" in flower["secrets"]


@pytest.mark.parametrize(
    "run", [run for _, run in table.runs(Layout.COMPOSE)], ids=lambda run: run.name
)
def test_compose_runs_the_process_tables_commands(run: table.Run) -> None:
    # compose reads "$$" as one "$": the container runs the command with "$"
    command = [arg.replace("$$", "$") for arg in _command(_services()[run.name])]
    assert command == list(run.argv)


def test_every_service_of_the_occ_image_is_in_the_process_table() -> None:
    image = _services()["migrate"]["image"]
    on_image = {name for name, service in _services().items() if service.get("image") == image}
    assert on_image == {run.name for _, run in table.runs(Layout.COMPOSE)}


def test_compose_workers_shut_down_warm_and_beat_runs_once() -> None:
    services = _services()
    assert services["beat"]["deploy"]["replicas"] == 1
    # Docker signals only the main process: warm shutdown, within the grace period
    for name in ("control", "worker"):
        assert "REMAP_SIGTERM" not in services[name]["environment"], name
        assert services[name]["stop_grace_period"] == "30s"


def test_compose_keeps_published_ports_on_loopback() -> None:
    for name, service in _services().items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


# -- Dockerfile ---------------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    instructions = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def test_dockerfile_installs_the_source_tree_and_runs_unprivileged() -> None:
    instructions = _dockerfile()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    users = [rest for keyword, rest in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")
    copies = [rest for keyword, rest in instructions if keyword == "COPY"]
    assert ". ." in copies, "alembic/ and alembic.ini must be in the image"
    assert any(
        "pip install" in rest and "-e ." in rest
        for keyword, rest in instructions
        if keyword == "RUN"
    )
    cmd = [rest for keyword, rest in instructions if keyword == "CMD"][-1]
    assert json.loads(cmd) == list(table.API.runs[Layout.COMPOSE].argv), "compose's api"
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    for needed in ("occ", "alembic", "alembic.ini", "pyproject.toml", "README.md"):
        assert needed not in ignored, needed


# -- the thin wrappers --------------------------------------------------------------------------


def _run(arguments: list[str], calls: list[list[str]]) -> list[str]:
    result = CliRunner().invoke(cli.cli, arguments)
    assert result.exit_code == 0, result.output
    assert calls and calls[-1][:2] == [sys.executable, "-m"]
    return calls[-1][2:]


def test_occ_worker_runs_the_procfile_worker(exec_calls: list[list[str]]) -> None:
    argv = _run(
        [
            "worker",
            "--queues",
            "occ.drivers",
            "--pool",
            "prefork",
            "--concurrency",
            "4",
            "--",
            "-E",
            "worker_soft_shutdown_timeout=20",
        ],
        exec_calls,
    )
    celery = _celery(argv, "worker")
    heroku = _celery(_procfile()["worker"], "worker")
    for option in (("-Q", "--queues"), ("-P", "--pool"), ("-n", "--hostname"), ("-c",)):
        assert _option(celery, *option) == _option(heroku, *option), option
    assert argv[-2:] == ["-E", "worker_soft_shutdown_timeout=20"]


def test_occ_worker_names_the_node_after_its_queues(exec_calls: list[list[str]]) -> None:
    assert (
        _option(_run(["worker", "-Q", "occ.control", "-P", "threads"], exec_calls), "-n")
        == "control@%h"
    )
    assert _option(_run(["worker"], exec_calls), "-n") == "worker@%h"


def test_occ_api_and_beat_run_the_procfile_commands(exec_calls: list[list[str]]) -> None:
    api = _run(["api", "--bind", "0.0.0.0:9000", "--workers", "3"], exec_calls)
    assert api[:2] == _procfile()["web"][:2]
    assert _option(api, "--worker-class", "-k") == serving.WORKER_CLASS
    assert _option(api, "--bind") == "0.0.0.0:9000"
    assert _option(api, "--workers") == "3"
    beat = _celery(_run(["beat"], exec_calls), "beat")
    assert _option(beat, "-S") == "celery.beat:Scheduler"


def test_wrappers_check_the_settings_before_exec(
    exec_calls: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCC_WORKER_LEASE_DURATION_MS", "soon")
    result = CliRunner().invoke(cli.cli, ["worker"])
    assert result.exit_code == cli.EXIT_OCC_ERROR
    assert exec_calls == []


def _dev_api_argv(home_dir: Path) -> list[str]:
    """The command line ``occ dev`` starts its API with."""
    specs = children.specs(
        layout=home.Home(home_dir),
        env={"OCC_BROKER_URL": "redis://127.0.0.1:6379/0"},
        cwd=home_dir,
        listener_fd=3,
    )
    [api] = [spec for spec in specs if spec.name == children.API]
    return list(api.argv)


def test_occ_dev_serves_the_api_with_the_same_worker_class(tmp_path: Path) -> None:
    argv = _dev_api_argv(tmp_path)
    assert argv[argv.index("gunicorn") + 1] == "occ.web.app:create_app()"
    assert _option(argv, "--worker-class", "-k") == serving.WORKER_CLASS


def test_every_gunicorn_command_line_names_occs_logger_class(
    exec_calls: list[list[str]], tmp_path: Path
) -> None:
    """gunicorn's own lines are occ's JSON lines wherever the API runs."""
    image = [rest for keyword, rest in _dockerfile() if keyword == "CMD"][-1]
    command_lines = {
        "Procfile web": _procfile()["web"],
        "compose api": _command(_services()["api"]),
        "image": json.loads(image),
        "occ api": _run(["api"], exec_calls),
        "occ dev": _dev_api_argv(tmp_path),
    }
    for where, argv in command_lines.items():
        assert _option(argv, "--logger-class") == serving.LOGGER_CLASS, where
