"""Flower beside ``occ dev`` (``--flower``): its child, its credential and its readiness.

Flower runs on the children's broker, bound to 127.0.0.1, read-only, behind basic auth. The
credential (``occ:<random>``) is generated once into ``<home>/flower.auth`` (0600) and reused, so a
browser's saved password keeps working; it reaches Flower through its environment
(``FLOWER_BASIC_AUTH``), never its command line, which every local user can read. Nothing here
starts a process.
"""

from __future__ import annotations

import secrets
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from occ.dev import errors, fleet, home, readiness
from occ.process_table import table

NAME: Final = "flower"
"""Its name among occ dev's children (and its log file's)."""
USER: Final = "occ"
DEFAULT_PORT: Final = 5555


def credential(layout: home.Home) -> str:
    """``occ:<password>``, generated into ``flower.auth`` (0600) on first use, then reused."""
    path = layout.flower_auth
    if not path.exists():
        home.write_private(path, f"{USER}:{secrets.token_urlsafe(18)}\n")
    value = path.read_text(encoding="utf-8").strip()
    user, sep, password = value.partition(":")
    if not (sep and user and password):
        raise errors.DevError(f"{path} is not user:password; delete it to generate a new one")
    return value


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def check_port(port: int) -> None:
    """Fail before anything starts when 127.0.0.1:``port`` is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise errors.DevError(
                f"Flower cannot listen on 127.0.0.1:{port}: {exc.strerror}; "
                "give another --flower-port"
            ) from exc


def spec(*, env: Mapping[str, str], cwd: Path, port: int, basic_auth: str) -> fleet.ChildSpec:
    """Flower on loopback, on the children's broker, with ``basic_auth`` in its environment."""
    argv = (
        sys.executable,
        "-m",
        *table.CELERY,
        "flower",
        "--read-only",
        "--address=127.0.0.1",
        f"--port={port}",
    )
    return fleet.ChildSpec(NAME, argv, {**env, "FLOWER_BASIC_AUTH": basic_auth}, cwd=cwd)


def ready(flower_url: str) -> bool:
    """Whether Flower answers its (unauthenticated) ``/healthcheck`` with 200."""
    return readiness.answers_ok(f"{flower_url}/healthcheck")
