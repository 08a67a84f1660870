"""``/v1/access-bindings``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("access_bindings", __name__, url_prefix="/v1/access-bindings")
