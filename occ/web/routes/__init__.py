"""One blueprint per resource; ``ROUTE_MODULES`` is what the app registers."""

from __future__ import annotations

from typing import Final

from occ.web.routes import health, installation, namespaces

ROUTE_MODULES: Final = (health, installation, namespaces)
