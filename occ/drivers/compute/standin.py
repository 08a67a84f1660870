"""The stand-in gateway (``occ.drivers.gateway``) as every Compute Driver starts and probes it.

Its options for one revision (the drivers add where it listens and how the credential
arrives), the configuration file it reads, and the one ``GET /healthz`` that says a gateway
answers for that revision. Pure functions plus that probe; nothing here starts, finds or ends
a process or a container.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base

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


def answers_for(host: str, port: int, revision_id: str, *, timeout_s: float) -> bool:
    """One ``GET /healthz`` (no proxy): 200 with a JSON body naming this revision."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        body = response.read(_HEALTH_BODY_LIMIT)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    if response.status != 200:
        return False
    try:
        document = json.loads(body)
    except ValueError:
        return False
    return isinstance(document, dict) and document.get("revisionId") == revision_id
