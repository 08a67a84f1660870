"""Asking a gateway on its host whether it is healthy: one ``GET /healthz`` and the reading of
its answer. Standard library only: the bundle copies this file beside the host helper
(``hostside``), which observes with it, and the driver reads the answers it gets through
SSH with the same ``document``."""

from __future__ import annotations

import json
import socket
from typing import Any

HEALTH_TIMEOUT_S = 0.5
"""How long an observation waits for one gateway's ``/healthz``."""
HEALTH_ANSWER_LIMIT = 65536


def healthy(port: int, revision_id: str) -> bool:
    """One ``GET /healthz`` on 127.0.0.1: 200 with a JSON body naming ``revision_id``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=HEALTH_TIMEOUT_S) as s:
            s.sendall(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            while len(answer) < HEALTH_ANSWER_LIMIT:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return False
    return document(answer, revision_id) is not None


def document(response: bytes, revision_id: str) -> dict[str, Any] | None:
    """The JSON body of an HTTP ``response`` to ``GET /healthz`` that is 200 naming
    ``revision_id``, else ``None`` (the driver reads the answers it gets through SSH with it
    too, and their startup ``warnings``)."""
    head, _, body = response.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")):
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    named = isinstance(parsed, dict) and parsed.get("revisionId") == revision_id
    return parsed if named else None
