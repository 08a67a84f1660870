"""``/v1/installation``."""

from __future__ import annotations

from typing import Any

from occ.controller import installation
from occ.web import calls
from occ.web.routes import blueprints
from occ.web.schemas import namespaces as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/installation",
    description="The Installation singleton.",
)


@blueprint.operation("GET", "", item=schemas.Installation, requires="installation:read")
def get_installation() -> dict[str, Any]:
    return calls.item(installation.get_installation)
