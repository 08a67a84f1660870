"""``/v1/access-bindings``: Roles granted to principals at a scope (deleting one revokes it)."""

from __future__ import annotations

from typing import Any

from occ.controller import access_bindings
from occ.state import iam_policy
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
        command=lambda body: access_bindings.CreateBinding(
            role_id=body["role_id"],
            principal_id=body["principal_id"],
            namespace_id=body["namespace_id"],
            resource=_resource(body["resource"]),
        ),
        doc="Bind a Role to a principal; ``resource`` limits it to that exact resource.",
    ),
    list=collections.Listing(
        "list_access_bindings", access_bindings.list_bindings, "The live (unrevoked) bindings."
    ),
    get=collections.Reading(
        "get_access_binding",
        access_bindings.get_binding,
        "A binding; a revoked one shows ``revokedAt``.",
    ),
    delete=collections.Delete(
        "revoke_access_binding",
        access_bindings.revoke_binding,
        command=lambda binding_id: access_bindings.RevokeBinding(binding_id=binding_id),
        doc="Revoke a binding. A repeat answers the same.",
    ),
)


def _resource(value: dict[str, Any] | None) -> iam_policy.ResourceRef | None:
    """The body's ``resource`` (``ResourceRef``), if it names one."""
    return None if value is None else iam_policy.ResourceRef(kind=value["kind"], id=value["id"])
