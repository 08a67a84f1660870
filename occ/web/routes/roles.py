"""``/v1/roles``: named sets of permissions (deleting one is a soft delete)."""

from __future__ import annotations

from occ.controller import roles
from occ.web.routes import blueprints, collections
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/roles",
    description="Roles: named sets of kind:action permissions.",
    requires="installation:administer",
)

collections.declare(
    blueprint,
    item=schemas.Role,
    id_parameter="role_id",
    create=collections.Create(
        "create_role",
        roles.create_role,
        body=schemas.RoleCreate,
        command=lambda body: roles.CreateRole(
            name=body["name"], permissions=body["permissions"], namespace_id=body["namespace_id"]
        ),
        doc="Create a Role (Installation-wide, or of one Namespace with ``namespaceId``).",
    ),
    list=collections.Listing("list_roles", roles.list_roles, "The live Roles."),
    get=collections.Reading(
        "get_role", roles.get_role, "A Role; a deleted one shows ``deletedAt``."
    ),
    delete=collections.Delete(
        "delete_role",
        roles.delete_role,
        command=lambda role_id: roles.DeleteRole(role_id=role_id),
        doc="Delete a Role (soft): its bindings stop granting. A repeat answers the same.",
    ),
)
