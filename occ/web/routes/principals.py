"""``/v1/principals``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("principals", __name__, url_prefix="/v1/principals")
