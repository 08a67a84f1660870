"""``/v1/restrictions``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("restrictions", __name__, url_prefix="/v1/restrictions")
