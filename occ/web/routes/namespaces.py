"""``/v1/namespaces``: create (202-style accepted state), list, read, delete."""

from __future__ import annotations

from typing import Any

from occ.controller import namespaces
from occ.web import access, calls, locations, pagination, preconditions, routing
from occ.web.schemas import common
from occ.web.schemas import namespaces as schemas

blueprint = routing.Blueprint(
    "namespaces", __name__, url_prefix="/v1/namespaces", description="Tenant boundaries."
)


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.NamespaceCreate)
@blueprint.response(201, common.envelope(schemas.Namespace))
@access.requires("namespace:create")
@locations.at("namespaces.get_namespace", namespace_id="id")
def create_namespace(body: dict[str, Any]) -> dict[str, Any]:
    """Admit a Namespace; it is ``provisioning`` until a worker makes it ``ready``."""
    return calls.admitted(
        namespaces.create_namespace,
        name=body["name"],
        existing_namespace=body["existing_namespace"],
    )


@blueprint.route("", methods=["GET"])
@blueprint.arguments(pagination.PageQuery, location="query")
@blueprint.response(200, pagination.envelope(schemas.Namespace))
@access.requires("namespace:read")
def list_namespaces(query: dict[str, Any]) -> dict[str, Any]:
    """The Namespaces the caller may read."""
    return calls.page(namespaces.list_namespaces, query)


@blueprint.route("/<namespace_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Namespace))
@access.requires("namespace:read")
def get_namespace(namespace_id: str) -> dict[str, Any]:
    return calls.item(namespaces.get_namespace, namespace_id=namespace_id)


@blueprint.route("/<namespace_id>", methods=["DELETE"])
@blueprint.response(202, common.envelope(schemas.Namespace))
@access.requires("namespace:delete")
@locations.at("namespaces.get_namespace")
def delete_namespace(namespace_id: str) -> dict[str, Any]:
    """Admit the deletion of an empty Namespace; repeat after a failure to retry."""
    return calls.admitted(
        namespaces.delete_namespace, namespace_id=namespace_id, if_match=preconditions.expected()
    )
