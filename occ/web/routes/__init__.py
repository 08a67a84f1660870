"""One blueprint per resource (a ``blueprints.Blueprint``); ``ROUTE_MODULES`` is what the app
registers."""

from __future__ import annotations

from typing import Final

from occ.web.routes import (
    access_bindings,
    accounts,
    agent_logs,
    agents,
    audit_events,
    authorization_checks,
    configurations,
    docs,
    health,
    installation,
    metrics,
    namespaces,
    principals,
    restrictions,
    roles,
    secrets,
    sessions,
    sign_in,
    work,
)

ROUTE_MODULES: Final = (
    health,
    installation,
    namespaces,
    principals,
    roles,
    access_bindings,
    restrictions,
    authorization_checks,
    configurations,
    secrets,
    accounts,
    agents,
    agent_logs,
    work,
    audit_events,
    sessions,
    metrics,
    docs,
)

BROWSER_MODULES: Final = (sign_in,)
"""Plain Flask blueprints for browsers (redirects and pages), outside the JSON API's
document."""
