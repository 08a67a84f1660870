"""The shell steps of the deployment files, run: release's idle step and the compose secrets.

``tests/unit/test_procfile.py`` checks the files' shapes without running anything.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SECRETS_SCRIPT = ROOT / "scripts" / "compose-secrets.sh"
IDLE_PROBE_S = 1.0
"""How long the release step is given to end by itself outside honcho (it ends at once)."""


def _release_idle_step() -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith("release:"):
            return line.partition(":")[2].split(" && ")[-1].strip()
    raise AssertionError("no release in the Procfile")


@pytest.mark.parametrize(
    ("environment", "ends"), [({}, True), ({"HONCHO_PROCESS_NAME": "release.1"}, False)]
)
def test_release_stays_idle_only_under_honcho(environment: dict[str, str], ends: bool) -> None:
    idle = subprocess.Popen(
        ["sh", "-c", _release_idle_step()], env={"PATH": os.defpath, **environment}
    )
    try:
        idle.wait(timeout=IDLE_PROBE_S)
        assert ends, "under honcho release must stay idle"
        assert idle.returncode == 0
    except subprocess.TimeoutExpired:
        assert not ends, "outside honcho release must end"
    finally:
        idle.kill()
        idle.wait()


def test_the_secrets_script_writes_every_declared_secret_once(tmp_path: Path) -> None:
    declared = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["secrets"]
    target = tmp_path / "secrets"
    subprocess.run([str(SECRETS_SCRIPT), str(target)], check=True)
    assert {path.name for path in target.iterdir()} == set(declared)
    read = {name: (target / name).read_text().strip() for name in declared}
    assert read["database_url"] == (
        f"postgresql+psycopg://occ_app:{read['occ_app_db_password']}@postgres:5432/occ"
    )
    assert read["migration_database_url"] == (
        f"postgresql+psycopg://occ:{read['postgres_password']}@postgres:5432/occ"
    )
    assert re.fullmatch(r"[^:\s]+:\S{32,}", read["flower_basic_auth"])
    before = read["api_key_pepper"]
    subprocess.run([str(SECRETS_SCRIPT), str(target)], check=True)
    assert (target / "api_key_pepper").read_text().strip() == before, "never overwritten"
