"""When a gateway container counts as ready: the engine's health check and its timing.

Every gateway container gets the engine health check ``HealthCheck`` describes (``/healthz``
answers 200, probed inside the container). A started container is judged by what the engine
says of it: while the check is ``starting`` it is not ready (the driver waits), ``unhealthy``
fails the pass, ``healthy`` (or a container without a health check) lets the driver probe the
gateway itself for its revision and its startup warnings. Pure functions of the engine's
``inspect`` document.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute.docker.workload import PORT

_NANOSECONDS: Final = 1_000_000_000
PROBE: Final = (
    "import socket,sys\n"
    f"s=socket.create_connection(('127.0.0.1',{PORT}),2)\n"
    "s.sendall(b'GET /healthz HTTP/1.0\\r\\n\\r\\n')\n"
    "a=b''\n"
    "while len(a)<65536:\n"
    " c=s.recv(4096)\n"
    " if not c:break\n"
    " a+=c\n"
    "h,_,b=a.partition(b'\\r\\n\\r\\n')\n"
    "sys.stdout.buffer.write(b)\n"
    "sys.exit(0 if h[9:12]==b'200' else 1)\n"
)
"""The engine's health check: ``/healthz`` answers 200 (no shell, no curl in the image). It
prints the answer's body, which the engine keeps in the container's health log: the driver
reads the gateway's status there, from wherever it reaches the engine."""


@dataclass(frozen=True)
class HealthCheck:
    """The timing of the engine's health check (seconds).

    The first check runs ``interval_s`` after the start (engines before API 1.44 have no
    faster start interval), so a deploy waits that long at least: 2 s by default, a balance
    between that wait and an interpreter started per check. Failures within ``start_period_s``
    do not count; ``retries`` failures in a row after it make the container ``unhealthy``.
    """

    interval_s: float = 2.0
    timeout_s: float = 2.0
    retries: int = 3
    start_period_s: float = 30.0

    def engine_config(self) -> dict[str, Any]:
        """The ``healthcheck`` argument of the engine's container create."""
        return {
            "test": ["CMD", "/usr/bin/python3", "-S", "-B", "-E", "-c", PROBE],
            "interval": int(self.interval_s * _NANOSECONDS),
            "timeout": int(self.timeout_s * _NANOSECONDS),
            "retries": self.retries,
            "start_period": int(self.start_period_s * _NANOSECONDS),
        }


class State(enum.Enum):
    """What the engine says of a gateway container."""

    PROBE = "probe"
    """It runs and its health check passed (or it has none): read its status (``reported``),
    else ask the gateway itself."""
    STARTING = "starting"
    """It runs, its health check has not passed yet: not ready, wait."""
    UNHEALTHY = "unhealthy"
    """It runs and its health check failed: the pass fails."""
    EXITED = "exited"
    """It does not run (exited, restarting, paused): the next pass starts or unpauses it."""


def state_of(inspected: Mapping[str, Any]) -> State:
    """The state of a container from the engine's ``inspect`` document.

    The engine also says ``unhealthy`` whenever it stops probing: from a pause until the first
    probe after the unpause. Only a failed probe (a failing streak) makes a container
    unhealthy here; without one it is still ``starting``."""
    state = inspected.get("State") or {}
    if not state.get("Running") or state.get("Restarting") or state.get("Paused"):
        return State.EXITED
    health = state.get("Health") or {}
    status = health.get("Status")
    if status in (None, "", "none", "healthy"):
        return State.PROBE
    if status == "unhealthy" and health.get("FailingStreak", 0) > 0:
        return State.UNHEALTHY
    return State.STARTING


def reported(inspected: Mapping[str, Any]) -> object:
    """The gateway's ``/healthz`` document as the engine's latest health check printed it, if
    that check passed and printed JSON; ``None`` otherwise (no check yet, a check of an older
    occ that prints nothing, or an answer cut at the engine's 4 KiB)."""
    log = ((inspected.get("State") or {}).get("Health") or {}).get("Log") or []
    if not log or log[-1].get("ExitCode") != 0:
        return None
    try:
        return json.loads(log[-1].get("Output") or "")
    except ValueError:
        return None


DEFAULT: Final = HealthCheck()
"""The health check of every gateway unless a driver is given another."""
