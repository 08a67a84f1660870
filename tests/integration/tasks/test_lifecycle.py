"""A worker's start-up checks for real: a failed check logs ``worker.startup-error`` and exits 3.

Covers the three checks (settings, the bootstrapped Installation, the Compute Driver's
preflight); the reason names what failed and never carries a secret. The refusal before
bootstrap is in ``test_work.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from occ.controller import installation
from occ.db import Database
from occ.tasks import lifecycle
from tests.support import processes


def _startup_errors(worker: processes.Process) -> list[dict[str, str]]:
    return [
        json.loads(line)
        for line in worker.text().splitlines()
        if line.startswith("{") and '"event":"worker.startup-error"' in line
    ]


def test_a_failed_preflight_exits_not_ready_with_the_driver_code(
    db: Database, env: dict[str, str], fleet: processes.Fleet, local_root: Path, tmp_path: Path
) -> None:
    installation.bootstrap_installation(db, name="lifecycle", admin_name="admin")
    local_root.parent.mkdir(parents=True, exist_ok=True)
    local_root.write_text("a file where the driver wants a directory\n")
    worker = fleet.worker("preflight", ready=False)
    assert worker.popen.wait(60) == lifecycle.EXIT_NOT_READY
    assert not (tmp_path / "preflight.ready").exists()
    [event] = _startup_errors(worker)
    assert event["error"] == "PermanentDriverError"
    assert event["reason"].startswith("LOCAL_ROOT_UNUSABLE")
    assert event["code"] == "WORKER_UNAVAILABLE"
    assert '"event":"worker.error"' not in worker.text()


def test_invalid_settings_exit_not_ready_without_showing_values(
    env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    secret = "s3cr3t-value-never-logged"
    fleet.env["OCC_WORKER_MAX_ATTEMPTS"] = secret
    worker = fleet.worker("settings", ready=False)
    assert worker.popen.wait(60) == lifecycle.EXIT_NOT_READY
    [event] = _startup_errors(worker)
    assert event["error"] == "InvalidInput"
    assert event["reason"] == "/OCC_WORKER_MAX_ATTEMPTS: must be an integer written as digits"
    assert secret not in worker.text()
    assert "Traceback" not in worker.text()
