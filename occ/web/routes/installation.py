"""``/v1/installation``."""

from __future__ import annotations

from typing import Any

from occ.controller import installation
from occ.web import access, calls, routing
from occ.web.schemas import common
from occ.web.schemas import namespaces as schemas

blueprint = routing.Blueprint(
    "installation",
    __name__,
    url_prefix="/v1/installation",
    description="The Installation singleton.",
)


@blueprint.route("", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Installation))
@access.requires("installation:read")
def get_installation() -> dict[str, Any]:
    return calls.item(installation.get_installation)
