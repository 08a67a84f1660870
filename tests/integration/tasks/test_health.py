"""``worker.health``: a worker reports, every interval, that it lives and how much is pending."""

from __future__ import annotations

import pytest

from occ.controller import namespaces
from occ.settings.config import Settings
from occ.state.db import Database
from occ.tasks import app as tasks_app
from occ.tasks import worker_process
from occ.telemetry import observability
from tests.support import databases
from tests.support.processes import wait_for


def test_health_reports_pending_work(
    db: Database,
    admin: str,
    database_urls: databases.DatabaseUrls,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="pending"))
    app = tasks_app.create(Settings(database_url=database_urls.app))
    observability.configure("occ-worker")
    process = worker_process.of(app)
    process.health_interval_s = 0.05
    reporter = process.start_health_reporter()
    try:
        lines: list[str] = []

        def reported() -> bool:
            lines.extend(capfd.readouterr().err.splitlines())
            return any('"event":"worker.health"' in line for line in lines)

        wait_for(reported, timeout=10, message="a worker.health line")
    finally:
        process.request_shutdown()
        reporter.join(5)
        process.dispose()
    assert not reporter.is_alive(), "the reporter must end once shutdown is requested"
    health = next(line for line in lines if '"event":"worker.health"' in line)
    assert '"count":1' in health
