"""``/v1/access-bindings``: Roles granted to principals at a scope (deleting one revokes it)."""

from __future__ import annotations

from occ.controller import access_bindings
from occ.web.routes import blueprints, collections
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/access-bindings",
    description="A Role granted to a principal Installation-wide, in a Namespace, or on one "
    "resource.",
    requires="installation:administer",
)

collections.declare(
    blueprint,
    item=schemas.AccessBinding,
    id_parameter="binding_id",
    create=collections.Create(
        "create_access_binding",
        access_bindings.create_binding,
        body=schemas.AccessBindingCreate,
        fields=("role_id", "principal_id", "namespace_id", "resource"),
        doc="Bind a Role to a principal; ``resource`` limits it to that exact resource.",
    ),
    list=collections.Operation(
        "list_access_bindings", access_bindings.list_bindings, "The live (unrevoked) bindings."
    ),
    get=collections.Operation(
        "get_access_binding",
        access_bindings.get_binding,
        "A binding; a revoked one shows ``revokedAt``.",
    ),
    delete=collections.Operation(
        "revoke_access_binding",
        access_bindings.revoke_binding,
        "Revoke a binding. A repeat answers the same.",
    ),
)
