"""The embedded PostgreSQL of ``occ dev``: a real server from the ``pgserver`` wheel.

``EmbeddedPostgres`` runs it on a unix socket with trust authentication, its data in
``<home>/pg``; ``start_for`` starts it unless ``OCC_DATABASE_URL`` names a server already and
points the children's environment at it. It never runs in production and opens no TCP port.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
import warnings
from pathlib import Path
from typing import Final
from urllib.parse import quote

import sqlalchemy as sa

from occ.dev import errors, processes

SUPERUSER: Final = "postgres"
"""The superuser pgserver's initdb creates (trust authentication on the socket)."""

DATABASE_NAME: Final = "occ"
APP_ROLE: Final = "occ_app"

logger = logging.getLogger("occ.dev")


class EmbeddedPostgres:
    """A PostgreSQL server from the ``pgserver`` wheel with its data in ``pgdata``.

    Listens only on a unix socket (trust authentication). ``start`` initialises the data
    directory on first use and reuses a server already running on it.
    """

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.resolve()
        self.socket_dir: Path | None = None
        self.pid: int | None = None

    def start(self) -> None:
        """Start (or adopt) the server; raises ``errors.ServiceError`` when it cannot run."""
        logging.getLogger("pgserver").setLevel(logging.WARNING)
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            # pgserver keeps a lock file under XDG_RUNTIME_DIR and warns when it is unset
            warnings.simplefilter("ignore")
            try:
                from pgserver import postgres_server  # noqa: PLC0415 - only occ dev needs it
            except ImportError as exc:
                raise errors.ServiceError("the pgserver package is not installed") from exc
            # pgserver caches one handle per data directory and process, even once the server
            # is gone: start() must look at the directory again
            postgres_server.PostgresServer._instances.pop(self.pgdata, None)
            try:
                # cleanup_mode=None: stop() below stops the server, not an atexit hook
                server = postgres_server.get_server(self.pgdata, cleanup_mode=None)
                info = server.get_postmaster_info()
            except (OSError, subprocess.SubprocessError, AssertionError) as exc:
                raise errors.ServiceError(
                    f"the embedded PostgreSQL did not start ({type(exc).__name__}: {exc}); "
                    f"see {self.pgdata / 'log'}"
                ) from exc
        if info.socket_dir is None:
            raise errors.ServiceError("the embedded PostgreSQL listens on no unix socket")
        self.socket_dir = Path(info.socket_dir)
        self.pid = int(info.pid)

    def url(self, database: str, user: str = SUPERUSER) -> str:
        """A SQLAlchemy URL for ``user`` on ``database`` through the socket (no password)."""
        if self.socket_dir is None:
            raise errors.ServiceError("the embedded PostgreSQL is not running")
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql+psycopg://{user}@/{database}?host={host}"

    def ensure_database(self, name: str) -> None:
        """Create database ``name`` (owned by the superuser) unless it exists."""
        engine = sa.create_engine(
            self.url("postgres"), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )
        try:
            with engine.connect() as connection:
                exists = connection.execute(
                    sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
                ).first()
                if exists is None:
                    connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()

    def stop(self, timeout: float = 30.0) -> bool:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; True if it stopped."""
        pid = self.pid
        if pid is None:
            return True
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            if not processes.pid_alive(pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while processes.pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        stopped = not processes.pid_alive(pid)
        if stopped:
            self.pid = None
        return stopped


def start_for(pgdata: Path, env: dict[str, str]) -> EmbeddedPostgres | None:
    """Start the embedded server unless ``env`` names a database; set the children's URLs."""
    if env.get("OCC_DATABASE_URL"):
        logger.info("using the database from OCC_DATABASE_URL")
        return None
    logger.info("starting the embedded PostgreSQL in %s", pgdata)
    server = EmbeddedPostgres(pgdata)
    try:
        server.start()
        server.ensure_database(DATABASE_NAME)
    except BaseException as exc:
        server.stop()  # also on Ctrl-C: nothing started here may outlive occ dev
        if isinstance(exc, errors.DevError) or not isinstance(exc, Exception):
            raise
        raise errors.DevError(f"the embedded PostgreSQL failed: {errors.first_line(exc)}") from exc
    # trust authentication on the socket: occ_app (created by the migration) needs no password
    env["OCC_MIGRATION_DATABASE_URL"] = server.url(DATABASE_NAME)
    env["OCC_DATABASE_URL"] = server.url(DATABASE_NAME, APP_ROLE)
    return server
