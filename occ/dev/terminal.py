"""What ``occ dev`` prints on the terminal: the ready line on stdout, warnings and errors on stderr.

stdout carries exactly one line (``dev.ready``); stderr carries ``occ: warning: …`` and
``occ: error: …`` lines, each also kept in ``dev.log``. Nothing printed here holds a secret: the
administrator's key and one-time console sign-in link are only ever written to their files.
"""

from __future__ import annotations

import json
import logging
import sys

logger = logging.getLogger("occ.dev")


def announce_ready(
    api_url: str,
    key_file: str,
    sign_in_link_file: str,
    broker_url: str | None = None,
    flower: tuple[str, str] | None = None,
) -> None:
    """The one stdout line: ``{"event": "dev.ready", "apiUrl": …, "adminKeyFile": …,
    "consoleUrl": …, "signInLinkFile": …}`` (the link, a credential, stays in its file),
    ``brokerUrl`` (the Redis occ dev runs, which has no password: point Flower at it) when
    occ dev runs its own broker, and ``flowerUrl`` and ``flowerAuthFile`` (its ``user:password``
    stays in that file) when it runs Flower (``flower``: the two)."""
    line = {
        "event": "dev.ready",
        "apiUrl": api_url,
        "adminKeyFile": key_file,
        "consoleUrl": f"{api_url}/console",
        "signInLinkFile": sign_in_link_file,
    }
    if broker_url is not None:
        line["brokerUrl"] = broker_url
    if flower is not None:
        line["flowerUrl"], line["flowerAuthFile"] = flower
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    logger.info("ready: %s", api_url)


def warn(message: str) -> None:
    """``occ: warning: …`` on stderr (one line), and the same in ``dev.log``."""
    logger.warning(message)
    _stderr(f"occ: warning: {message}")


def error(message: str) -> None:
    """``occ: error: …`` on stderr (one line), and the same in ``dev.log``."""
    logger.error(message)
    _stderr(f"occ: error: {message}")


def _stderr(line: str) -> None:
    sys.stderr.write(" ".join(line.split()) + "\n")
    sys.stderr.flush()
