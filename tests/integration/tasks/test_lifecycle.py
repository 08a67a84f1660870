"""A worker's start-up checks for real: a failed check logs ``worker.startup-error`` and exits 3.

Covers the three checks (settings, the wait for a bootstrapped Installation, the Compute
Driver's preflight); the reason names what failed and never carries a secret. A worker started
before the bootstrap waits for it and becomes ready; beat waits the same way and gives up after
its bound. The refusal after the bound is in ``test_work.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

from occ.controller import installation
from occ.state.db import Database
from occ.tasks import lifecycle
from tests.support import processes
from tests.support.processes import wait_for


def _events(process: processes.Process, event: str) -> list[dict[str, str]]:
    return [
        json.loads(line)
        for line in process.text().splitlines()
        if line.startswith("{") and f'"event":"{event}"' in line
    ]


def _startup_errors(worker: processes.Process) -> list[dict[str, str]]:
    return _events(worker, "worker.startup-error")


@contextlib.contextmanager
def _newer_schema(owner_db: Database) -> Iterator[None]:
    """The database as a newer release left it: at a migration this release does not know."""
    with owner_db.transaction() as session:
        applied = session.execute(sa.text("SELECT version_num FROM occ.alembic_version")).scalar()
        session.execute(sa.text("UPDATE occ.alembic_version SET version_num = '9999_newer'"))
    try:
        yield
    finally:
        with owner_db.transaction() as session:
            session.execute(
                sa.text("UPDATE occ.alembic_version SET version_num = :applied"),
                {"applied": applied},
            )


def test_a_worker_and_beat_refuse_a_schema_a_newer_release_migrated(
    db: Database, owner_db: Database, env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    installation.bootstrap_installation(db, name="lifecycle", admin_name="admin")
    with _newer_schema(owner_db):
        worker = fleet.worker("older", ready=False)
        beat = fleet.beat("older-beat")
        assert worker.popen.wait(60) == lifecycle.EXIT_NOT_READY  # at once: no wait
        assert beat.popen.wait(60) == lifecycle.EXIT_NOT_READY
    assert not (tmp_path / "older.ready").exists()
    for event in (*_startup_errors(worker), *_events(beat, "beat.startup-error")):
        assert event["code"] == "SCHEMA_TOO_NEW"
        assert event["error"] == "SchemaTooNew"
        assert event["reason"].startswith("SCHEMA_TOO_NEW: the database schema is at revision")
    assert len(_startup_errors(worker)) == 1 and len(_events(beat, "beat.startup-error")) == 1
    assert not _events(worker, "startup.waiting")


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
    assert event["error"] == "InvalidSettings"
    assert event["reason"] == "/OCC_WORKER_MAX_ATTEMPTS: must be an integer written as digits"
    assert secret not in worker.text()
    assert "Traceback" not in worker.text()


def test_a_worker_started_before_bootstrap_waits_and_becomes_ready(
    db: Database, env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    worker = fleet.worker("patient", ready=False)
    wait_for(
        lambda: _events(worker, "startup.waiting") or not worker.alive(),
        timeout=60,
        message="the worker to wait for the bootstrap",
    )
    [waiting] = _events(worker, "startup.waiting")
    assert "not bootstrapped" in waiting["reason"]
    assert not (tmp_path / "patient.ready").exists()
    installation.bootstrap_installation(db, name="lifecycle", admin_name="admin")
    wait_for(
        lambda: (tmp_path / "patient.ready").exists() or not worker.alive(),
        timeout=30,
        message="the worker to become ready after the bootstrap",
    )
    assert worker.alive(), worker.tail()
    assert _events(worker, "startup.ready")
    assert _startup_errors(worker) == []


def test_beat_waits_for_the_bootstrap_then_gives_up_after_its_bound(
    env: dict[str, str], fleet: processes.Fleet
) -> None:
    fleet.env["OCC_STARTUP_WAIT_MS"] = "1500"
    beat = fleet.beat()
    assert beat.popen.wait(60) == lifecycle.EXIT_NOT_READY
    assert _events(beat, "startup.waiting")
    [event] = _events(beat, "beat.startup-error")
    assert event["error"] == "DependencyUnavailable"
    assert event["reason"].startswith("the installation is not bootstrapped")


def test_an_unavailable_hook_owner_fails_closed_before_the_first_operation(
    env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    fleet.env["OCC_LIFECYCLE_HOOK_OWNERS"] = "sandbox,iam"
    fleet.env["OCC_IAM_HOOK"] = "runtime-identities"
    worker = fleet.worker("owners", ready=False)
    assert worker.popen.wait(60) == lifecycle.EXIT_NOT_READY
    assert not (tmp_path / "owners.ready").exists()
    [event] = _startup_errors(worker)
    assert event["error"] == "InvalidSettings"
    assert event["reason"] == (
        "/lifecycle_hook_owners: sandbox owns hooks but no sandbox driver is selected"
    )


def test_worker_started_names_the_compute_and_sandbox_drivers_and_the_owners(
    db: Database, env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    installation.bootstrap_installation(db, name="lifecycle", admin_name="admin")
    fleet.env["OCC_SANDBOX_DRIVER"] = "reference"
    fleet.env["OCC_IAM_HOOK"] = "runtime-identities"
    fleet.env["OCC_IAM_IDENTITY_ROOT"] = str(tmp_path / "identities")
    worker = fleet.worker("selected")
    wait_for(
        lambda: _events(worker, "worker.started") or not worker.alive(),
        timeout=30,
        message="worker.started",
    )
    [started] = _events(worker, "worker.started")
    assert started["computeDriver"] == "local"
    assert started["sandboxDriver"] == "reference"
    assert started["hookOwners"] == "sandbox:reference,iam:runtime-identities"
