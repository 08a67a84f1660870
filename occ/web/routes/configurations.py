"""``/v1/namespaces/<namespace_id>/configurations``: create, list, read, update, delete."""

from __future__ import annotations

from typing import Any

from occ.controller import configurations
from occ.drivers.configuration import ConfigurationDriver
from occ.web import calls, locations, preconditions
from occ.web.routes import blueprints
from occ.web.schemas import configurations as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/configurations",
    description="Native JSON configuration documents; PATCH bumps the generation.",
)


@blueprint.operation(
    "POST",
    "",
    body=schemas.ConfigurationCreate,
    created=schemas.Configuration,
    requires="configuration:create",
)
@locations.at("configurations.get_configuration", configuration_id="id")
def create_configuration(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Create a Configuration at generation 1 (the Namespace must be ``ready``)."""
    command = configurations.CreateConfiguration(
        namespace_id=namespace_id, name=body["name"], document=body["document"]
    )
    return calls.item(
        configurations.create_configuration,
        command,
        store=_store(),
        quota_defaults=calls.quota_defaults(),
    )


@blueprint.operation(
    "GET", "", page=schemas.Configuration, named=True, requires="configuration:read"
)
def list_configurations(query: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """The Namespace's Configurations the caller may read."""
    return calls.page(
        configurations.list_configurations, query, namespace_id=namespace_id, store=_store()
    )


@blueprint.operation(
    "GET", "/<configuration_id>", item=schemas.Configuration, requires="configuration:read"
)
def get_configuration(namespace_id: str, configuration_id: str) -> dict[str, Any]:
    return calls.item(
        configurations.get_configuration,
        namespace_id=namespace_id,
        configuration_id=configuration_id,
        store=_store(),
    )


@blueprint.operation(
    "PATCH",
    "/<configuration_id>",
    body=schemas.ConfigurationUpdate,
    item=schemas.Configuration,
    requires="configuration:update",
)
def update_configuration(
    body: dict[str, Any], namespace_id: str, configuration_id: str
) -> dict[str, Any]:
    """Change the name and/or replace the document; ``generation`` moves by one."""
    command = configurations.UpdateConfiguration(
        namespace_id=namespace_id,
        configuration_id=configuration_id,
        name=body.get("name"),
        document=body.get("document"),
        if_match=preconditions.expected(),
    )
    return calls.item(configurations.update_configuration, command, store=_store())


@blueprint.operation("DELETE", "/<configuration_id>", requires="configuration:delete")
def delete_configuration(namespace_id: str, configuration_id: str) -> None:
    """Delete a Configuration no Agent uses (409 otherwise)."""
    command = configurations.DeleteConfiguration(
        namespace_id=namespace_id,
        configuration_id=configuration_id,
        if_match=preconditions.expected(),
    )
    calls.call(configurations.delete_configuration, command, store=_store())


def _store() -> ConfigurationDriver:
    """The Configuration Driver the startup configuration selected."""
    return calls.context().drivers.configuration
