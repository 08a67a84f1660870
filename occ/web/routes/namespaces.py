"""``/v1/namespaces``: create (202-style accepted state), list, read, delete."""

from __future__ import annotations

from typing import Any

import flask

from occ.controller import namespaces
from occ.web import access, locations, pagination, preconditions, routing
from occ.web.schemas import common
from occ.web.schemas import namespaces as schemas

blueprint = routing.Blueprint(
    "namespaces", __name__, url_prefix="/v1/namespaces", description="Tenant boundaries."
)


def _context() -> Any:
    return flask.current_app.extensions["occ"]


@blueprint.route("", methods=["POST"])
@blueprint.arguments(schemas.NamespaceCreate)
@blueprint.response(201, common.envelope(schemas.Namespace))
@access.requires("namespace:create")
@locations.at("namespaces.get_namespace", namespace_id="id")
def create_namespace(body: dict[str, Any]) -> dict[str, Any]:
    """Admit a Namespace; it is ``provisioning`` until a worker makes it ``ready``."""
    context = _context()
    view = namespaces.create_namespace(
        context.runtime.database,
        actor_id=access.principal_id(),
        name=body["name"],
        existing_namespace=body["existing_namespace"],
    )
    context.nudger.nudge()
    return common.wrap(view)


@blueprint.route("", methods=["GET"])
@blueprint.arguments(pagination.PageQuery, location="query")
@blueprint.response(200, pagination.envelope(schemas.Namespace))
@access.requires("namespace:read")
def list_namespaces(query: dict[str, Any]) -> dict[str, Any]:
    """The Namespaces the caller may read."""
    return pagination.page(
        namespaces.list_namespaces(
            _context().runtime.database,
            actor_id=access.principal_id(),
            window=pagination.window(query, pagination.BY_CREATION),
        )
    )


@blueprint.route("/<namespace_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.Namespace))
@access.requires("namespace:read")
def get_namespace(namespace_id: str) -> dict[str, Any]:
    return common.wrap(
        namespaces.get_namespace(
            _context().runtime.database, actor_id=access.principal_id(), namespace_id=namespace_id
        )
    )


@blueprint.route("/<namespace_id>", methods=["DELETE"])
@blueprint.response(202, common.envelope(schemas.Namespace))
@access.requires("namespace:delete")
@locations.at("namespaces.get_namespace")
def delete_namespace(namespace_id: str) -> dict[str, Any]:
    """Admit the deletion of an empty Namespace; repeat after a failure to retry."""
    context = _context()
    view = namespaces.delete_namespace(
        context.runtime.database,
        actor_id=access.principal_id(),
        namespace_id=namespace_id,
        if_match=preconditions.expected(),
    )
    context.nudger.nudge()
    return common.wrap(view)
