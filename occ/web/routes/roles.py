"""``/v1/roles``: named sets of permissions (deleting one is a soft delete)."""

from __future__ import annotations

from typing import Any

from occ.controller import roles
from occ.web import access, calls, locations, pagination, routing
from occ.web.schemas import common
from occ.web.schemas import iam as schemas

blueprint = routing.Blueprint(
    "roles",
    __name__,
    url_prefix="/v1/roles",
    description="Roles: named sets of kind:action permissions.",
)


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.RoleCreate)
@blueprint.response(201, common.envelope(schemas.Role))
@access.requires("installation:administer")
@locations.at("roles.get_role", role_id="id")
def create_role(body: dict[str, Any]) -> dict[str, Any]:
    """Create a Role (Installation-wide, or of one Namespace with ``namespaceId``)."""
    return calls.item(
        roles.create_role,
        name=body["name"],
        permissions=body["permissions"],
        namespace_id=body["namespace_id"],
    )


@blueprint.route("", methods=["GET"])
@blueprint.arguments(pagination.PageQuery, location="query")
@blueprint.response(200, pagination.envelope(schemas.Role))
@access.requires("installation:administer")
def list_roles(query: dict[str, Any]) -> dict[str, Any]:
    """The live Roles."""
    return calls.page(roles.list_roles, query)


@blueprint.route("/<role_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Role))
@access.requires("installation:administer")
def get_role(role_id: str) -> dict[str, Any]:
    """A Role; a deleted one shows ``deletedAt``."""
    return calls.item(roles.get_role, role_id=role_id)


@blueprint.route("/<role_id>", methods=["DELETE"])
@blueprint.response(200, common.envelope(schemas.Role))
@access.requires("installation:administer")
def delete_role(role_id: str) -> dict[str, Any]:
    """Delete a Role (soft): its bindings stop granting. A repeat answers the same."""
    return calls.item(roles.delete_role, role_id=role_id)
