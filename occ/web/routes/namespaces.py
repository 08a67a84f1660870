"""``/v1/namespaces``: create (202-style accepted state), list, read, delete; a Namespace's
quotas."""

from __future__ import annotations

from typing import Any

from occ.controller import namespaces, quotas
from occ.web import calls, locations, preconditions
from occ.web.routes import blueprints
from occ.web.schemas import namespaces as schemas

blueprint = blueprints.Blueprint(
    __name__, url_prefix="/v1/namespaces", description="Tenant boundaries."
)


@blueprint.operation(
    "POST", "", body=schemas.NamespaceCreate, created=schemas.Namespace, requires="namespace:create"
)
@locations.at("namespaces.get_namespace", namespace_id="id")
def create_namespace(body: dict[str, Any]) -> dict[str, Any]:
    """Admit a Namespace; it is ``provisioning`` until a worker makes it ``ready``."""
    command = namespaces.CreateNamespace(
        name=body["name"], existing_namespace=body["existing_namespace"]
    )
    return calls.admitted(namespaces.create_namespace, command)


@blueprint.operation("GET", "", page=schemas.Namespace, named=True, requires="namespace:read")
def list_namespaces(query: dict[str, Any]) -> dict[str, Any]:
    """The Namespaces the caller may read."""
    return calls.page(namespaces.list_namespaces, query)


@blueprint.operation("GET", "/<namespace_id>", item=schemas.Namespace, requires="namespace:read")
def get_namespace(namespace_id: str) -> dict[str, Any]:
    return calls.item(namespaces.get_namespace, namespace_id=namespace_id)


@blueprint.operation(
    "DELETE", "/<namespace_id>", accepted=schemas.Namespace, requires="namespace:delete"
)
@locations.at("namespaces.get_namespace")
def delete_namespace(namespace_id: str) -> dict[str, Any]:
    """Admit the deletion of an empty Namespace; repeat after a failure to retry."""
    command = namespaces.DeleteNamespace(
        namespace_id=namespace_id, if_match=preconditions.expected()
    )
    return calls.admitted(namespaces.delete_namespace, command)


@blueprint.operation(
    "GET", "/<namespace_id>/quotas", item=schemas.NamespaceQuotas, requires="namespace:read"
)
def get_quotas(namespace_id: str) -> dict[str, Any]:
    """The Namespace's quotas: each limit, what is used of it, and whether it is the
    Namespace's own or the installation's default."""
    return calls.item(quotas.get_quotas, namespace_id=namespace_id, defaults=calls.quota_defaults())


@blueprint.operation(
    "PATCH",
    "/<namespace_id>/quotas",
    body=schemas.QuotasUpdate,
    item=schemas.NamespaceQuotas,
    requires=("installation:administer", "namespace:read"),
)
def set_quotas(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Set the Namespace's own limits (null returns one to the installation default); a limit
    below what is used deletes nothing, it refuses creates until usage drops under it."""
    command = quotas.SetQuotas(namespace_id=namespace_id, limits=body)
    return calls.item(quotas.set_quotas, command, defaults=calls.quota_defaults())
