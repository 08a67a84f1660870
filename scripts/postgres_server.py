"""The test suite's PostgreSQL: checked (it answers, its user may create databases and roles),
or a Debian cluster started with ``pg_ctlcluster``, or the embedded ``pgserver`` one in
``.test-services/pg`` (see ``scripts/test_services.py`` for the order)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import psycopg

from scripts.service_finding import (
    CONNECT_TIMEOUT_S,
    ROOT,
    STATE,
    ServiceError,
    find_server,
    say,
    wait_answering,
)

PG_DIR = STATE / "pg"
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"

# pgserver keeps its lock file under XDG_RUNTIME_DIR and warns when it falls back to /tmp
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")


def _libpq_url(url: str) -> str:
    """A URL libpq understands (SQLAlchemy's ``postgresql+psycopg://`` is not one)."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def postgres_problem(url: str) -> str | None:
    """``None`` if ``url`` answers and its user may CREATE DATABASE and CREATE ROLE."""
    try:
        with psycopg.connect(
            _libpq_url(url), connect_timeout=CONNECT_TIMEOUT_S, autocommit=True
        ) as connection:
            row = connection.execute(
                "SELECT rolsuper OR (rolcreatedb AND rolcreaterole) FROM pg_roles "
                "WHERE rolname = current_user"
            ).fetchone()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not row or not row[0]:
        return "the user may not CREATE DATABASE and CREATE ROLE"
    return None


def start_debian_cluster() -> str | None:
    """Start the newest Debian cluster with pg_ctlcluster; its URL once it answers."""
    pg_ctlcluster = shutil.which("pg_ctlcluster")
    if pg_ctlcluster is None or not Path("/etc/postgresql").is_dir():
        return None
    versions = sorted(
        (entry.name for entry in Path("/etc/postgresql").iterdir() if (entry / "main").is_dir()),
        key=lambda name: [int(part) if part.isdigit() else 0 for part in name.split(".")],
    )
    if not versions:
        return None
    version = versions[-1]
    say(f"starting the system PostgreSQL {version} cluster (pg_ctlcluster)")
    try:
        result = subprocess.run(  # noqa: S603 - fixed arguments
            [pg_ctlcluster, "--skip-systemctl-redirect", version, "main", "start"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        say(f"pg_ctlcluster failed: {exc}")
        return None
    if result.returncode != 0:
        say(f"pg_ctlcluster exited {result.returncode}: {result.stderr.strip()[:300]}")
    return wait_answering(LOCAL_POSTGRES, postgres_problem)


def start_embedded_postgres() -> str:
    """Start (or reuse) the pgserver cluster in .test-services/pg; its server URL."""
    try:
        from pgserver.postgres_server import get_server  # noqa: PLC0415 - dev dependency, only here
    except ImportError as exc:
        raise ServiceError("pgserver is not installed (pip install -e '.[dev]')") from exc
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    STATE.mkdir(parents=True, exist_ok=True)
    say(f"starting the embedded PostgreSQL (pgserver) in {PG_DIR.relative_to(ROOT)}")
    # cleanup_mode=None: the server outlives this script, for the pytest run that follows
    server = get_server(PG_DIR, cleanup_mode=None)
    url = str(server.get_uri("postgres"))
    if wait_answering(url, postgres_problem, 10) is None:
        raise ServiceError(f"embedded PostgreSQL does not answer: {postgres_problem(url)}")
    return url


def stop_embedded_postgres() -> None:
    if not (PG_DIR / "postmaster.pid").exists():
        return
    from pgserver import _commands  # noqa: PLC0415

    # pgserver makes its command functions at import time (one per binary), out of mypy's
    # sight; this is the same function, made by name.
    pg_ctl = _commands.create_command_function("pg_ctl")
    user = "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=PG_DIR, user=user, timeout=60)
        say("stopped the embedded PostgreSQL")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        say(f"could not stop the embedded PostgreSQL: {exc}")


def find_postgres() -> str:
    return find_server(
        "PostgreSQL",
        variable="OCC_TEST_DATABASE_URL",
        problem_of=postgres_problem,
        local=LOCAL_POSTGRES,
        start_system=start_debian_cluster,
        start_embedded=start_embedded_postgres,
        system="system cluster",
    )
