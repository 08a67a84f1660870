"""``/v1/authorization-checks``: would a principal be allowed a permission on a resource?"""

from __future__ import annotations

from typing import Any

from occ.controller import authorization_checks
from occ.state import iam_policy
from occ.web import calls
from occ.web.routes import blueprints
from occ.web.schemas import authorization_checks as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/authorization-checks",
    description="Authorization checks: the decision current policy takes, changing nothing.",
)


@blueprint.operation(
    "POST",
    "",
    body=schemas.AuthorizationCheckCreate,
    item=schemas.AuthorizationCheck,
    requires="installation:administer",
)
def create_check(body: dict[str, Any]) -> dict[str, Any]:
    """Decide for the caller (any principal), or for ``principalId`` (needs
    ``installation:administer``); a read: nothing is created."""
    resource = body["resource"]
    question = authorization_checks.Check(
        permission=body["permission"],
        resource=iam_policy.ResourceRef(kind=resource["kind"], id=resource["id"]),
        namespace_id=body["namespace_id"],
        principal_id=body["principal_id"],
    )
    return calls.item(authorization_checks.check, question)
