"""``/v1/authorization-checks``: would a principal be allowed a permission on a resource?"""

from __future__ import annotations

from typing import Any

from occ.controller import authorization_checks
from occ.web import access, calls, routing
from occ.web.schemas import authorization_checks as schemas
from occ.web.schemas import common

blueprint = routing.Blueprint(
    "authorization_checks",
    __name__,
    url_prefix="/v1/authorization-checks",
    description="Authorization checks: the decision current policy takes, changing nothing.",
)


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.AuthorizationCheckCreate)
@blueprint.response(200, common.envelope(schemas.AuthorizationCheck))
@access.requires("installation:administer")
def create_check(body: dict[str, Any]) -> dict[str, Any]:
    """Decide for the caller (any principal), or for ``principalId`` (needs
    ``installation:administer``); a read: nothing is created."""
    return calls.item(
        authorization_checks.check,
        permission=body["permission"],
        resource=body["resource"],
        namespace_id=body["namespace_id"],
        principal_id=body["principal_id"],
    )
