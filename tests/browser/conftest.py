"""The browser suite: Debian's Chromium driven by Playwright (pytest-playwright), against the
API served over HTTP in this process, real worker processes, and the tests' OpenID Connect
provider.

Chromium is found by path (``OCC_TEST_CHROMIUM``, else ``chromium`` on PATH; the test setup
installs Debian's package, ``scripts/test_services.py``); a browser is never downloaded. On a
machine without it the suite is skipped with the command that installs it, except under CI,
where a missing browser fails the run.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import werkzeug.serving

from occ.settings.config import Settings
from occ.state.db import Database
from occ.web.app import create_app
from tests.support import brokers, databases, gateways, oidc_provider, processes, worlds

INSTALL_COMMAND = "apt-get install chromium"
AUTH_SECRET = "browser-suite-auth-secret-" + "x" * 20
BROKER_DATABASE = 10


def chromium_path() -> str | None:
    """Where Debian's Chromium is, if it is installed."""
    configured = os.environ.get("OCC_TEST_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    """pytest-playwright's launch arguments: the distribution's Chromium, by path."""
    found = chromium_path()
    if found is None:
        message = f"Chromium is not installed: {INSTALL_COMMAND} (Debian's package)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the browser suite")
        pytest.skip(message)
    return {"executable_path": found, "args": ["--no-sandbox"], "headless": True}


class _Dispatcher:
    """A WSGI app whose target is set once the server's port (the app's base URL) is known."""

    def __init__(self) -> None:
        self.app: Any = None

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self.app(environ, start_response)


@dataclass(frozen=True)
class Console:
    """The running system: the API's base URL, the provider, the admin, the database."""

    base_url: str
    provider: oidc_provider.Provider
    admin_id: str
    db: Database


@pytest.fixture
def console(
    database_urls: databases.DatabaseUrls, db: Database, tmp_path: Path
) -> Iterator[Console]:
    admin_id = worlds.installation_admin(db, "browser")
    local_root = tmp_path / "local"
    dispatcher = _Dispatcher()
    server = werkzeug.serving.make_server("127.0.0.1", 0, dispatcher, threaded=True)
    base_url = f"http://127.0.0.1:{server.server_port}"
    with brokers.flushed(BROKER_DATABASE) as broker_url, oidc_provider.running() as provider:
        env = processes.worker_environment(
            database_url=database_urls.app,
            broker_url=broker_url,
            local_root=local_root,
            lease_ms=5_000,
            claim_interval_ms=500,
        )
        settings = Settings.from_env(env).replace(
            auth_secret=AUTH_SECRET,
            auth_base_url=base_url,
            auth_oidc_discovery_url=provider.discovery_url,
            auth_oidc_client_id=oidc_provider.CLIENT_ID,
            auth_oidc_client_secret=oidc_provider.CLIENT_SECRET,
        )
        app = create_app(settings)
        dispatcher.app = app
        serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
        serving.start()
        (tmp_path / "fleet").mkdir()
        fleet = processes.Fleet(env=env, directory=tmp_path / "fleet")
        try:
            fleet.control_worker()
            fleet.worker("driver")
            yield Console(base_url=base_url, provider=provider, admin_id=admin_id, db=db)
        finally:
            fleet.stop()
            server.shutdown()
            serving.join(timeout=10)
            server.server_close()
            app.extensions["occ"].runtime.database.dispose()
            gateways.stop_all(local_root)
