"""Invalid settings end every process entry point with one line naming the key, no traceback:
``occ`` commands (exit 2), the gunicorn app factory (gunicorn stops) and the Celery app; so does
an unset ``OCC_ENV`` (``ENVIRONMENT_NOT_SET``), which ``occ dev`` alone sets by itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from occ.tasks import lifecycle
from occ.web import app as web_app
from tests.support import databases

SECRET = "s3cr3t-never-shown"
OCC = str(Path(sys.executable).with_name("occ"))
ROOT = Path(__file__).resolve().parents[3]


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose settings file has a wrong type for ``lease_ms``."""
    path = tmp_path / "settings.yaml"
    path.write_text(f"lease_ms: soon\napi_key_pepper: {SECRET}\n")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("OCC_")},
        "OCC_ENV": "development",
        "OCC_CONFIG_PATH": str(path),
        "PYTHONPATH": str(ROOT),  # the occ of this tree, whatever is installed
    }


@pytest.mark.parametrize("command", [["api"], ["worker"], ["beat"], ["db", "upgrade"]])
def test_occ_exits_2_with_one_line_naming_the_yaml_key(
    env: dict[str, str], command: list[str]
) -> None:
    done = _run([OCC, *command], env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "occ: error: INVALID_REQUEST: /lease_ms: input should be a valid integer"
    ]
    assert SECRET not in done.stdout + done.stderr


def test_occ_names_the_variable_of_a_secret_file_it_cannot_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    del env["OCC_CONFIG_PATH"]
    env["OCC_SECRET_KEY_FILE"] = str(tmp_path / "missing")
    done = _run([OCC, "db", "upgrade"], env)
    assert done.returncode == 2, done.stderr
    [only] = done.stderr.splitlines()
    assert only.startswith("occ: error: INVALID_REQUEST: /OCC_SECRET_KEY_FILE: cannot read")


def test_the_gunicorn_app_factory_stops_gunicorn_with_one_line(env: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()", "--bind", "127.0.0.1:0"]
    done = _run([*argv, "--workers", "1"], env)
    assert done.returncode == web_app.EXIT_WORKER_BOOT_ERROR, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and SECRET not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == ["occ-api: error: INVALID_REQUEST: /lease_ms: input should be a valid integer"]


def test_the_celery_app_exits_not_ready_naming_the_key(env: dict[str, str]) -> None:
    done = _run(
        [sys.executable, "-m", "celery", "-A", "occ.tasks.app", "worker", "-P", "solo"], env
    )
    assert done.returncode == lifecycle.EXIT_NOT_READY, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "Traceback" not in output and SECRET not in output
    assert '"reason":"/lease_ms: input should be a valid integer"' in output


UNSET = "/OCC_ENV: must be set to development or production (only occ dev sets it itself)"


@pytest.fixture
def unset(env: dict[str, str]) -> dict[str, str]:
    """Valid settings but for an unset ``OCC_ENV``."""
    return {k: v for k, v in env.items() if k not in ("OCC_ENV", "OCC_CONFIG_PATH")}


@pytest.mark.parametrize(
    "command",
    [["api"], ["worker"], ["beat"], ["db", "upgrade"], ["bootstrap", "--if-missing"]],
)
def test_occ_refuses_to_start_without_occ_env(unset: dict[str, str], command: list[str]) -> None:
    done = _run([OCC, *command], unset)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"occ: error: ENVIRONMENT_NOT_SET: {UNSET}"]


def test_the_gunicorn_app_factory_refuses_to_start_without_occ_env(unset: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()", "--bind", "127.0.0.1:0"]
    done = _run([*argv, "--workers", "1"], unset)
    assert done.returncode == web_app.EXIT_WORKER_BOOT_ERROR, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == [f"occ-api: error: ENVIRONMENT_NOT_SET: {UNSET}"]


@pytest.mark.parametrize("program", ["worker", "beat"])
def test_the_celery_app_refuses_to_start_without_occ_env(
    unset: dict[str, str], program: str
) -> None:
    argv = [sys.executable, "-m", "celery", "-A", "occ.tasks.app", program]
    done = _run([*argv, *(["-P", "solo"] if program == "worker" else [])], unset)
    assert done.returncode == lifecycle.EXIT_NOT_READY, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert '"code":"ENVIRONMENT_NOT_SET"' in output and f'"reason":"{UNSET}"' in output


def test_the_same_environment_with_occ_env_set_runs(
    unset: dict[str, str], database_urls: databases.DatabaseUrls
) -> None:
    unset["OCC_DATABASE_URL"] = database_urls.app
    unset["OCC_MIGRATION_DATABASE_URL"] = database_urls.owner
    assert _run([OCC, "db", "upgrade"], unset).returncode == 2
    done = _run([OCC, "db", "upgrade"], {**unset, "OCC_ENV": "development"})
    assert done.returncode == 0, done.stderr[-3000:]
