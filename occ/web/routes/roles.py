"""``/v1/roles``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("roles", __name__, url_prefix="/v1/roles")
