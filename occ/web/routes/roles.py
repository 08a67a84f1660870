"""``/v1/roles``: named sets of permissions (deleting one is a soft delete)."""

from __future__ import annotations

from typing import Any

from occ.controller import roles
from occ.web import calls, locations
from occ.web.routes import blueprints
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/roles",
    description="Roles: named sets of kind:action permissions.",
    requires="installation:administer",
)


@blueprint.operation("POST", "", body=schemas.RoleCreate, created=schemas.Role)
@locations.at("roles.get_role", role_id="id")
def create_role(body: dict[str, Any]) -> dict[str, Any]:
    """Create a Role (Installation-wide, or of one Namespace with ``namespaceId``)."""
    return calls.item(
        roles.create_role,
        name=body["name"],
        permissions=body["permissions"],
        namespace_id=body["namespace_id"],
    )


@blueprint.operation("GET", "", page=schemas.Role)
def list_roles(query: dict[str, Any]) -> dict[str, Any]:
    """The live Roles."""
    return calls.page(roles.list_roles, query)


@blueprint.operation("GET", "/<role_id>", item=schemas.Role)
def get_role(role_id: str) -> dict[str, Any]:
    """A Role; a deleted one shows ``deletedAt``."""
    return calls.item(roles.get_role, role_id=role_id)


@blueprint.operation("DELETE", "/<role_id>", item=schemas.Role)
def delete_role(role_id: str) -> dict[str, Any]:
    """Delete a Role (soft): its bindings stop granting. A repeat answers the same."""
    return calls.item(roles.delete_role, role_id=role_id)
