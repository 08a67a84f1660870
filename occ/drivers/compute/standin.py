"""The stand-in gateway (``occ.drivers.gateway``) as every Compute Driver starts and probes it.

Its options for one revision (the drivers add where it listens and how the credential
arrives), the configuration file it reads, its endpoint on the loopback, and the one
``GET /healthz`` there that says a gateway answers for that revision and which startup
warnings it reported. Pure functions plus that
probe; nothing here starts, finds or ends a process or a container.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base

LOOPBACK: Final = "127.0.0.1"
"""Where the local driver's gateways listen and the docker driver's are published."""

_HEALTH_BODY_LIMIT: Final = 65_536


def revision_arguments(revision: base.RevisionSpec, *, config: str) -> list[str]:
    """The options that tie the gateway to ``revision`` and its configuration file."""
    return [
        "--revision-id",
        revision.revision_id,
        "--agent-id",
        revision.agent_id,
        "--generation",
        str(revision.configuration_generation),
        "--config",
        config,
    ]


def configuration_text(document: Mapping[str, Any]) -> str:
    """The content of the revision's configuration file (stable: sorted keys)."""
    return json.dumps(document, indent=2, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):  # a frozen document's mappings are read-only views
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def endpoint(port: int) -> str:
    """The endpoint of a gateway listening on ``LOOPBACK:port``."""
    return f"http://{LOOPBACK}:{port}"


def answers_for(port: int, revision_id: str, *, timeout_s: float) -> bool:
    """One ``GET /healthz`` on ``LOOPBACK:port`` (no proxy): 200 with a JSON body naming this
    revision."""
    return status_of(port, revision_id, timeout_s=timeout_s) is not None


def status_of(
    port: int, revision_id: str, *, timeout_s: float
) -> tuple[base.StartupWarning, ...] | None:
    """One ``GET /healthz`` on ``LOOPBACK:port`` (no proxy): the startup warnings of a gateway
    that answers 200 for this revision; ``None`` when it does not (or its answer is
    malformed)."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout_s)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        body = response.read(_HEALTH_BODY_LIMIT)
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    if response.status != 200:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return status_in(document, revision_id)


def status_in(document: object, revision_id: str) -> tuple[base.StartupWarning, ...] | None:
    """The startup warnings of a ``/healthz`` document that names this revision; ``None`` when
    it names another or is malformed."""
    if not isinstance(document, dict) or document.get("revisionId") != revision_id:
        return None
    return startup_warnings(document)


def startup_warnings(document: Mapping[str, Any]) -> tuple[base.StartupWarning, ...] | None:
    """The ``warnings`` of a gateway's status document as it reported them (none when it
    reports none); ``None`` when they are not a list of ``{"code", "detail"}`` strings. Their
    codes and details are judged by the worker, not here."""
    reported = document.get("warnings", [])
    if not isinstance(reported, list):
        return None
    warnings = []
    for entry in reported:
        if not isinstance(entry, dict):
            return None
        code, detail = entry.get("code"), entry.get("detail")
        if not isinstance(code, str) or not isinstance(detail, str):
            return None
        warnings.append(base.StartupWarning(code, detail))
    return tuple(warnings)
