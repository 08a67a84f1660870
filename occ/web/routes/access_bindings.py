"""``/v1/access-bindings``: Roles granted to principals at a scope (deleting one revokes it)."""

from __future__ import annotations

from typing import Any

from occ.controller import access_bindings
from occ.web import calls, locations
from occ.web.routes import blueprints
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/access-bindings",
    description="A Role granted to a principal Installation-wide, in a Namespace, or on one "
    "resource.",
    requires="installation:administer",
)


@blueprint.operation("POST", "", body=schemas.AccessBindingCreate, created=schemas.AccessBinding)
@locations.at("access_bindings.get_access_binding", binding_id="id")
def create_access_binding(body: dict[str, Any]) -> dict[str, Any]:
    """Bind a Role to a principal; ``resource`` limits it to that exact resource."""
    return calls.item(
        access_bindings.create_binding,
        role_id=body["role_id"],
        principal_id=body["principal_id"],
        namespace_id=body["namespace_id"],
        resource=body["resource"],
    )


@blueprint.operation("GET", "", page=schemas.AccessBinding)
def list_access_bindings(query: dict[str, Any]) -> dict[str, Any]:
    """The live (unrevoked) bindings."""
    return calls.page(access_bindings.list_bindings, query)


@blueprint.operation("GET", "/<binding_id>", item=schemas.AccessBinding)
def get_access_binding(binding_id: str) -> dict[str, Any]:
    """A binding; a revoked one shows ``revokedAt``."""
    return calls.item(access_bindings.get_binding, binding_id=binding_id)


@blueprint.operation("DELETE", "/<binding_id>", item=schemas.AccessBinding)
def revoke_access_binding(binding_id: str) -> dict[str, Any]:
    """Revoke a binding. A repeat answers the same."""
    return calls.item(access_bindings.revoke_binding, binding_id=binding_id)
