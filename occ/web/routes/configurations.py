"""``/v1/namespaces/<namespace_id>/configurations``."""

from __future__ import annotations

from occ.web import routing

blueprint = routing.Blueprint("configurations", __name__, url_prefix="/v1/namespaces/<namespace_id>/configurations")
