"""``/v1/namespaces/<namespace_id>/configurations``: create, list, read, update, delete."""

from __future__ import annotations

from typing import Any

from occ.controller import configurations
from occ.web import access, calls, locations, pagination, preconditions, routing
from occ.web.schemas import common
from occ.web.schemas import configurations as schemas

blueprint = routing.Blueprint(
    "configurations",
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/configurations",
    description="Native JSON configuration documents; PATCH bumps the generation.",
)


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.ConfigurationCreate)
@blueprint.response(201, common.envelope(schemas.Configuration))
@access.requires("configuration:create")
@locations.at("configurations.get_configuration", configuration_id="id")
def create_configuration(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Create a Configuration at generation 1 (the Namespace must be ``ready``)."""
    return calls.item(
        configurations.create_configuration,
        namespace_id=namespace_id,
        name=body["name"],
        document=body["document"],
    )


@blueprint.route("", methods=["GET"])
@blueprint.arguments(pagination.PageQuery, location="query")
@blueprint.response(200, pagination.envelope(schemas.Configuration))
@access.requires("configuration:read")
def list_configurations(query: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """The Namespace's Configurations the caller may read."""
    return calls.page(configurations.list_configurations, query, namespace_id=namespace_id)


@blueprint.route("/<configuration_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Configuration))
@access.requires("configuration:read")
def get_configuration(namespace_id: str, configuration_id: str) -> dict[str, Any]:
    return calls.item(
        configurations.get_configuration,
        namespace_id=namespace_id,
        configuration_id=configuration_id,
    )


@blueprint.route("/<configuration_id>", methods=["PATCH"])
@blueprint.arguments(schemas.ConfigurationUpdate)
@blueprint.response(200, common.envelope(schemas.Configuration))
@access.requires("configuration:update")
def update_configuration(
    body: dict[str, Any], namespace_id: str, configuration_id: str
) -> dict[str, Any]:
    """Change the name and/or replace the document; ``generation`` moves by one."""
    return calls.item(
        configurations.update_configuration,
        namespace_id=namespace_id,
        configuration_id=configuration_id,
        name=body.get("name"),
        document=body.get("document"),
        if_match=preconditions.expected(),
    )


@blueprint.route("/<configuration_id>", methods=["DELETE"])
@blueprint.response(204)
@access.requires("configuration:delete")
def delete_configuration(namespace_id: str, configuration_id: str) -> None:
    """Delete a Configuration no Agent uses (409 otherwise)."""
    calls.call(
        configurations.delete_configuration,
        namespace_id=namespace_id,
        configuration_id=configuration_id,
        if_match=preconditions.expected(),
    )
