"""The stand-in gateway's startup warnings: what it could not honour in its configuration.

A real harness loads the plugins its configuration enables and reports those that failed as
warnings that do not keep it from serving; the stand-in loads none, so each plugin the
configuration enables (``plugins.entries.<id>``, as OpenClaw spells it, or a list of ids in
``plugins``) is reported as ``PLUGIN_UNAVAILABLE`` with the plugin id as its detail, and a
``plugins`` value of another shape as ``CONFIGURATION_IGNORED`` with detail ``plugins``.
The gateway reports them in ``/healthz`` and in the ``gateway.started`` line it prints once it
serves (``STARTED``; ``started_fields`` reads that line back from a log).
Standard library only: the gateway image carries this module.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

PLUGIN_UNAVAILABLE: Final = "PLUGIN_UNAVAILABLE"
CONFIGURATION_IGNORED: Final = "CONFIGURATION_IGNORED"
MAX_WARNINGS: Final = 64
"""The most warnings a runtime reports (a deployment's result keeps at most this many)."""

CODE: Final = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
DETAIL: Final = re.compile(r"[A-Za-z0-9._~:@/ -]{1,200}")
"""The shapes of a warning's ``code`` and ``detail`` (as a deployment's result requires)."""
STARTED: Final = "gateway.started"
"""The ``event`` of the JSON line a gateway prints once it serves (with its ``warnings``)."""


def started_fields(line: str) -> dict[str, Any] | None:
    """The fields of a gateway's ``gateway.started`` log line; ``None`` for any other line.

    Raises:
        ValueError: the line names the event but is not a JSON object (cut, or garbled).
    """
    if STARTED not in line:
        return None
    try:
        fields = json.loads(line)
    except ValueError:
        raise ValueError("a malformed gateway.started line") from None
    if not isinstance(fields, dict):
        raise ValueError("a gateway.started line that is not a JSON object")
    return fields if fields.get("event") == STARTED else None


def of_configuration(document: Any) -> list[dict[str, str]]:
    """The warnings a stand-in started with ``document`` reports, in a stable order."""
    plugins = document.get("plugins") if isinstance(document, dict) else None
    if plugins is None:
        return []
    if isinstance(plugins, dict) and isinstance(plugins.get("entries", {}), dict):
        entries = plugins.get("entries", {})
        enabled = [
            name
            for name, entry in entries.items()
            if not (isinstance(entry, dict) and entry.get("enabled") is False)
        ]
    elif isinstance(plugins, list) and all(isinstance(name, str) for name in plugins):
        enabled = list(plugins)
    else:
        return [_warning(CONFIGURATION_IGNORED, "plugins")]
    warnings = [
        _warning(PLUGIN_UNAVAILABLE, name)
        if DETAIL.fullmatch(name)
        else _warning(CONFIGURATION_IGNORED, "plugins")
        for name in sorted(set(enabled))
    ]
    unique = [dict(pair) for pair in dict.fromkeys(tuple(w.items()) for w in warnings)]
    return unique[:MAX_WARNINGS]


def _warning(code: str, detail: str) -> dict[str, str]:
    return {"code": code, "detail": detail}
