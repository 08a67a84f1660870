"""``worker.health``: a worker reports, every interval, that it lives and how much is pending."""

from __future__ import annotations

import threading

import pytest

from occ import observability
from occ.config import Settings
from occ.controller import installation, namespaces
from occ.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import work
from tests.support import databases
from tests.support.processes import wait_for


def test_health_reports_pending_work(
    db: Database,
    database_urls: databases.DatabaseUrls,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    boot = installation.bootstrap_installation(db, name="health", admin_name="admin")
    assert boot.admin_principal_id is not None
    namespaces.create_namespace(db, actor_id=boot.admin_principal_id, name="pending")
    app = tasks_app.create(Settings(database_url=database_urls.app))
    observability.configure("occ-worker")
    monkeypatch.setattr(work, "HEALTH_INTERVAL_S", 0.05)
    reporter = threading.Thread(target=work._report_health, args=(app,), daemon=True)
    reporter.start()
    try:
        lines: list[str] = []

        def reported() -> bool:
            lines.extend(capfd.readouterr().err.splitlines())
            return any('"event":"worker.health"' in line for line in lines)

        wait_for(reported, timeout=10, message="a worker.health line")
    finally:
        work._shutdown.set()
        reporter.join(5)
        work._shutdown.clear()
        built = work._process.pop("worker", None)
        work._process.clear()
        if built is not None:
            built.database.dispose()
    health = next(line for line in lines if '"event":"worker.health"' in line)
    assert '"count":1' in health
