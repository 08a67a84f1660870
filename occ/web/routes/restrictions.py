"""``/v1/restrictions``: deny rules that beat every grant."""

from __future__ import annotations

from typing import Any

from occ.controller import restrictions
from occ.web import access, calls, locations, pagination, routing
from occ.web.schemas import common
from occ.web.schemas import iam as schemas

blueprint = routing.Blueprint(
    "restrictions",
    __name__,
    url_prefix="/v1/restrictions",
    description="Deny rules for one permission, optionally narrowed to a principal, a "
    "Namespace or one resource.",
)


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.RestrictionCreate)
@blueprint.response(201, common.envelope(schemas.Restriction))
@access.requires("installation:administer")
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


@blueprint.route("", methods=["GET"])
@blueprint.arguments(pagination.PageQuery, location="query")
@blueprint.response(200, pagination.envelope(schemas.Restriction))
@access.requires("installation:administer")
def list_restrictions(query: dict[str, Any]) -> dict[str, Any]:
    """Every restriction."""
    return calls.page(restrictions.list_restrictions, query)


@blueprint.route("/<restriction_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Restriction))
@access.requires("installation:administer")
def get_restriction(restriction_id: str) -> dict[str, Any]:
    return calls.item(restrictions.get_restriction, restriction_id=restriction_id)


@blueprint.route("/<restriction_id>", methods=["DELETE"])
@blueprint.response(200, common.envelope(schemas.Restriction))
@access.requires("installation:administer")
def delete_restriction(restriction_id: str) -> dict[str, Any]:
    """Remove a restriction; the response is what it was."""
    return calls.item(restrictions.delete_restriction, restriction_id=restriction_id)
