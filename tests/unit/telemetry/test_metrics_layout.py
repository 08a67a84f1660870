"""Each program's own Prometheus multiprocess directory in every way occ runs: the Procfile,
compose and the image, ``occ dev`` and the ``occ api`` wrapper (whose gunicorn loads the hooks
that keep the API's directory clean)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from occ import cli
from occ.dev import children, home
from occ.process_table import table
from occ.telemetry import metrics_directory
from occ.web import gunicorn_hooks

ROOT = Path(__file__).resolve().parents[3]
VARIABLE = metrics_directory.VARIABLE
IMAGE_DIRECTORY = table.IMAGE_METRICS
PROGRAMS = {"web": "web", "control": "control", "worker": "worker", "beat": "beat"}


def _procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text(encoding="utf-8").splitlines()
    return {
        name: command.strip()
        for name, _, command in (line.partition(":") for line in lines)
        if command and not name.startswith("#")
    }


def _config(argv: list[str]) -> str | None:
    for index, arg in enumerate(argv):
        if arg in ("--config", "-c") and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def test_each_procfile_program_has_its_own_directory_under_one_base() -> None:
    procfile = _procfile()
    for process, sub in PROGRAMS.items():
        words = shlex.split(procfile[process])
        assigned = [w for w in words if w.startswith(f"{VARIABLE}=")]
        assert assigned == [f"{VARIABLE}=${{{VARIABLE}:-/tmp/occ-metrics}}/{sub}"], process
    for process in ("release", "flower"):  # nothing of theirs is scraped
        assert VARIABLE not in procfile[process], process


def test_the_shell_gives_each_program_a_distinct_directory() -> None:
    procfile = _procfile()
    for base, root in (({}, "/tmp/occ-metrics"), ({VARIABLE: "/srv/m"}, "/srv/m")):
        seen = []
        for process in PROGRAMS:
            assignment = next(w for w in procfile[process].split() if w.startswith(f"{VARIABLE}="))
            script = f"{assignment} sh -c 'printf %s \"${VARIABLE}\"'"
            env = {"PATH": os.defpath, **base}
            result = subprocess.run(
                ["sh", "-c", script], env=env, capture_output=True, text=True, check=True
            )
            seen.append(result.stdout)
        assert seen == [f"{root}/{sub}" for sub in PROGRAMS.values()]


@functools.cache  # parsed once: the tests only read it
def _compose_services() -> dict[str, Any]:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
    assert isinstance(services, dict)
    return services


def test_compose_gives_every_occ_container_the_image_directory_unshared() -> None:
    for name in ("api", "control", "worker", "beat"):
        service = _compose_services()[name]
        assert service["environment"][VARIABLE] == IMAGE_DIRECTORY, name
        # a volume there would share one directory between containers (programs)
        mounts = [str(volume).split(":")[1] for volume in service.get("volumes", [])]
        assert IMAGE_DIRECTORY not in mounts, name
    argv = _compose_services()["api"]["command"]
    assert _config(argv) == gunicorn_hooks.CONFIG_OPTION


def test_the_image_sets_a_writable_directory_and_loads_the_hooks() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    env = " ".join(line for line in text.splitlines() if line.startswith("ENV "))
    assert f"{VARIABLE}={IMAGE_DIRECTORY}" in env.split()
    run = " ".join(line for line in text.splitlines() if line.startswith("RUN "))
    assert re.search(rf"mkdir -p [^&]*{IMAGE_DIRECTORY}", run)
    assert re.search(rf"chown occ:occ [^&]*{IMAGE_DIRECTORY}", run)
    cmd = next(line for line in reversed(text.splitlines()) if line.startswith("CMD "))
    assert _config(yaml.safe_load(cmd.removeprefix("CMD "))) == gunicorn_hooks.CONFIG_OPTION


def test_occ_dev_gives_each_child_its_own_directory_under_its_home(tmp_path: Path) -> None:
    layout = home.Home(tmp_path)
    specs = children.specs(
        layout=layout,
        env={"OCC_BROKER_URL": "redis://127.0.0.1:6379/0", VARIABLE: "/elsewhere"},
        cwd=tmp_path,
        listener_fd=3,
    )
    directories = {spec.name: spec.env[VARIABLE] for spec in specs}
    assert directories == {spec.name: str(layout.metrics / spec.name) for spec in specs}
    assert len(set(directories.values())) == len(specs) == 4
    [api] = [spec for spec in specs if spec.name == children.API]
    assert _config(list(api.argv)) == gunicorn_hooks.CONFIG_OPTION


def test_occ_dev_gives_each_worker_its_own_listener_port(tmp_path: Path) -> None:
    specs = children.specs(
        layout=home.Home(tmp_path),
        env={"OCC_BROKER_URL": "redis://127.0.0.1:6379/0", "OCC_METRICS_PORT": "9101"},
        cwd=tmp_path,
        listener_fd=3,
    )
    ports = {spec.name: spec.env["OCC_METRICS_PORT"] for spec in specs}
    assert (ports[children.CONTROL], ports[children.DRIVERS]) == ("9101", "9102")


def test_occ_dev_empties_the_metrics_of_a_previous_run(tmp_path: Path) -> None:
    layout = home.Home(tmp_path)
    (layout.metrics / "api").mkdir(parents=True)
    (layout.metrics / "api" / "counter_7.db").write_bytes(b"stale")
    home.empty_metrics(layout)
    assert layout.metrics.is_dir() and list(layout.metrics.iterdir()) == []


def test_occ_api_loads_the_hooks(exec_calls: list[list[str]]) -> None:
    result = CliRunner().invoke(cli.cli, ["api"])
    assert result.exit_code == 0, result.output
    assert _config(exec_calls[-1]) == gunicorn_hooks.CONFIG_OPTION
