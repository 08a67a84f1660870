"""``/v1/work``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("work", __name__, url_prefix="/v1/work")
