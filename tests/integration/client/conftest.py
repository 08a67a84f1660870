"""A running occ for the client: the API under gunicorn, control and driver workers and beat on
the test database and a private Redis database, an administrator's key in a file, and a way to
run ``occ`` client commands as the operator would (a subprocess, its own config directory);
the sign-in provider is the web tests' own.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from occ.controller import installation
from occ.state import api_keys
from occ.state.db import Database
from tests.integration.web.conftest import provider  # noqa: F401  (the sign-in tests')
from tests.support import brokers, databases, gateways, processes, servers

PEPPER = "test-pepper"
CONVERGENCE_MS = 8_000
"""Short enough for a never-healthy gateway to fail within a test, long enough for a healthy
one to start on a busy machine."""


@dataclass(frozen=True)
class Ran:
    """One finished ``occ`` command."""

    args: tuple[str, ...]
    exit_status: int
    stdout: str
    stderr: str


@dataclass
class Operator:
    """Runs ``occ`` client commands with their own config directory; keeps every output."""

    home: Path
    api_url: str
    key_file: Path
    runs: list[Ran] = field(default_factory=list)

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        variables = processes.clean_environment()
        variables.update({"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / "config")})
        variables.update(extra or {})
        return variables

    def run(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
        completed = subprocess.run(
            [sys.executable, "-c", "from occ.cli import main; main()", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.environment(env),
            cwd=self.home,
            timeout=120,
            check=False,
        )
        ran = Ran(tuple(args), completed.returncode, completed.stdout, completed.stderr)
        self.runs.append(ran)
        return ran

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``occ`` with ``args`` in the background, its stdout and stderr piped (not kept)."""
        return subprocess.Popen(
            [sys.executable, "-c", "from occ.cli import main; main()", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.environment(),
            cwd=self.home,
        )

    def ok(self, *args: str, stdin: str | None = None) -> Ran:
        ran = self.run(*args, stdin=stdin)
        assert ran.exit_status == 0, ran
        return ran

    def everything_printed(self) -> str:
        return "".join(ran.stdout + ran.stderr for ran in self.runs)


@pytest.fixture
def broker_url() -> Iterator[str]:
    with brokers.flushed(12) as url:
        yield url


@pytest.fixture
def environment(
    database_urls: databases.DatabaseUrls, broker_url: str, tmp_path: Path, db: Database
) -> dict[str, str]:
    return processes.worker_environment(
        database_url=database_urls.app,
        broker_url=broker_url,
        local_root=tmp_path / "local",
        lease_ms=3_000,
        claim_interval_ms=500,
        pepper=PEPPER,
        secret_key="test-secret-key-of-the-client-tests",
        settings={"OCC_WORKER_CONVERGENCE_TIMEOUT_MS": str(CONVERGENCE_MS)},
    )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass(frozen=True)
class Installed:
    """A bootstrapped Installation: its administrator and the operator's folder with the
    administrator's key in a file."""

    admin_id: str
    home: Path
    key_file: Path


def _installed(db: Database, tmp_path: Path) -> Installed:
    boot = installation.bootstrap_installation(db, name="client", admin_name="admin")
    assert boot.admin_principal_id is not None
    with db.transaction() as session:
        minted = api_keys.mint(session, principal_id=boot.admin_principal_id, pepper=PEPPER)
    home = tmp_path / "operator"
    home.mkdir()
    key_file = home / "admin.key"
    key_file.write_text(minted.plaintext + "\n")
    key_file.chmod(0o600)
    return Installed(boot.admin_principal_id, home, key_file)


@contextlib.contextmanager
def api(environment: dict[str, str], tmp_path: Path, port: int | None = None) -> Iterator[str]:
    """The API under gunicorn (on ``port``, else a free one) until the block ends; its URL
    once it answers."""
    port = port or servers.free_port()
    command = [*servers.API_COMMAND, "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    api = processes.start(tmp_path, "api", command, environment)
    api_url = f"http://127.0.0.1:{port}"
    try:
        processes.wait_for(
            lambda: _answers(f"{api_url}/readyz") or not api.alive(),
            timeout=60,
            message="the API to answer",
        )
        assert api.alive(), api.tail(3000)
        yield api_url
    finally:
        api.stop()


@pytest.fixture
def installed(db: Database, tmp_path: Path) -> Installed:
    return _installed(db, tmp_path)


@pytest.fixture
def api_only(
    environment: dict[str, str], installed: Installed, tmp_path: Path
) -> Iterator[Operator]:
    """The operator against the API alone (no workers): for reads of rows a test made."""
    with api(environment, tmp_path) as api_url:
        yield Operator(home=installed.home, api_url=api_url, key_file=installed.key_file)


@pytest.fixture
def operator(
    environment: dict[str, str], installed: Installed, tmp_path: Path
) -> Iterator[Operator]:
    fleet = processes.Fleet(env=environment, directory=tmp_path)
    try:
        with api(environment, tmp_path) as api_url:
            fleet.control_worker(concurrency=4)
            fleet.worker("drivers", queues="occ.drivers", concurrency=2)
            fleet.beat()
            yield Operator(home=installed.home, api_url=api_url, key_file=installed.key_file)
    finally:
        fleet.stop()
        gateways.stop_all(tmp_path / "local")
