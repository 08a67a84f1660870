"""``/v1/audit-events``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("audit_events", __name__, url_prefix="/v1/audit-events")
