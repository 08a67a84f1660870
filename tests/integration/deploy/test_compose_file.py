"""docker-compose.yml as Docker Compose reads it: ``docker compose config`` accepts it.

The file uses the Compose Specification as Compose v2 implements it: a top-level ``name``
and an inline ``configs.content`` (Compose 2.23.1 or newer); the README and docs/running.md
say so. The check runs wherever the ``docker compose`` plugin is installed (CI's runners
have it); on a machine without it the test is skipped, saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MINIMUM = (2, 23, 1)
"""The first Compose that reads ``configs.content``."""


def _compose_version() -> tuple[int, ...] | None:
    docker = shutil.which("docker")
    if docker is None:
        return None
    ran = subprocess.run(
        [docker, "compose", "version", "--short"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    found = re.match(r"v?(\d+)\.(\d+)\.(\d+)", ran.stdout.strip())
    return None if ran.returncode != 0 or found is None else tuple(map(int, found.groups()))


def test_the_documented_minimum_is_the_one_the_file_needs() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    assert re.search(r"^name: ", text, re.MULTILINE) and "    content: |" in text
    for document in ("README.md", "docs/running.md"):
        assert "Compose v2.23.1 or newer" in (ROOT / document).read_text(), document


def test_docker_compose_config_accepts_the_file() -> None:
    version = _compose_version()
    if version is None:
        pytest.skip("the docker compose plugin is not installed here")
    assert version >= MINIMUM, f"docker compose {version} is older than {MINIMUM}"
    ran = subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COMPOSE_PROJECT_NAME": "occ-config-check"},
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
