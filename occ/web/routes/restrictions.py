"""``/v1/restrictions``: deny rules that beat every grant."""

from __future__ import annotations

from typing import Any

from occ.controller import restrictions
from occ.web import calls, locations
from occ.web.routes import blueprints
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/restrictions",
    description="Deny rules for one permission, optionally narrowed to a principal, a "
    "Namespace or one resource.",
    requires="installation:administer",
)


@blueprint.operation("POST", "", body=schemas.RestrictionCreate, created=schemas.Restriction)
@locations.at("restrictions.get_restriction", restriction_id="id")
def create_restriction(body: dict[str, Any]) -> dict[str, Any]:
    """Deny ``permission``; each optional field narrows the rule (unset: everything)."""
    return calls.item(
        restrictions.create_restriction,
        permission=body["permission"],
        principal_id=body["principal_id"],
        namespace_id=body["namespace_id"],
        resource_id=body["resource_id"],
    )


@blueprint.operation("GET", "", page=schemas.Restriction)
def list_restrictions(query: dict[str, Any]) -> dict[str, Any]:
    """Every restriction."""
    return calls.page(restrictions.list_restrictions, query)


@blueprint.operation("GET", "/<restriction_id>", item=schemas.Restriction)
def get_restriction(restriction_id: str) -> dict[str, Any]:
    return calls.item(restrictions.get_restriction, restriction_id=restriction_id)


@blueprint.operation("DELETE", "/<restriction_id>", item=schemas.Restriction)
def delete_restriction(restriction_id: str) -> dict[str, Any]:
    """Remove a restriction; the response is what it was."""
    return calls.item(restrictions.delete_restriction, restriction_id=restriction_id)
