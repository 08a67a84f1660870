"""Stand-in gateways in the tests: stop every one a test's local driver left running under
its root, and read a gateway's health answer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import urllib.request
from pathlib import Path
from typing import Any


def stop_all(root: Path) -> list[int]:
    """SIGKILL each revision's recorded gateway under ``root`` (only if that pid still runs
    this revision's gateway: a recycled pid is left alone); the pids it stopped."""
    stopped = []
    for runtime in root.glob("agents/*/revisions/*/runtime.json"):
        try:
            recorded = json.loads(runtime.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        pid, revision_id = recorded.get("pid"), recorded.get("revisionId")
        if not isinstance(pid, int) or not isinstance(revision_id, str):
            continue
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if revision_id.encode() in arguments:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
    return stopped


def health(endpoint: str) -> dict[str, Any]:
    """The gateway at ``endpoint``'s ``GET /healthz`` answer (its revision, credential
    fingerprint and the like)."""
    with urllib.request.urlopen(f"{endpoint}/healthz", timeout=3) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body
