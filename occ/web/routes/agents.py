"""``/v1/namespaces/<namespace_id>/agents``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("agents", __name__, url_prefix="/v1/namespaces/<namespace_id>/agents")
