"""What finding each test server shares: where the scripts keep their state, progress lines,
URLs fit for messages, waiting for a server to answer, and the order of discovery (the given
server, the local one, the system one started, an embedded one)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".test-services"
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


def find_server(
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
