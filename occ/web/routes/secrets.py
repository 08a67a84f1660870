"""``/v1/namespaces/<namespace_id>/secrets``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("secrets", __name__, url_prefix="/v1/namespaces/<namespace_id>/secrets")
