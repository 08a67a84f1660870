"""``/v1/namespaces/<namespace_id>/secrets``: create, list, read metadata, delete.

The value is accepted on create and never returned; the selected Secret Driver keeps it
(``occ.drivers.secret``).
"""

from __future__ import annotations

from typing import Any

from occ.controller import secrets
from occ.web import calls, locations, preconditions
from occ.web.routes import blueprints
from occ.web.schemas import secrets as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/secrets",
    description="Write-only secret values; reads return metadata only.",
)


@blueprint.operation(
    "POST", "", body=schemas.SecretCreate, created=schemas.Secret, requires="secret:create"
)
@locations.at("secrets.get_secret", secret_id="id")  # noqa: S106 (a URL argument)
def create_secret(body: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """Store a Secret (the Namespace must be ``ready``); the answer holds metadata only."""
    command = secrets.CreateSecret(
        namespace_id=namespace_id, name=body["name"], value=body["value"]
    )
    return calls.item(
        secrets.create_secret,
        command,
        store=calls.context().secrets,
        quota_defaults=calls.quota_defaults(),
    )


@blueprint.operation("GET", "", page=schemas.Secret, named=True, requires="secret:read")
def list_secrets(query: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """The Namespace's Secrets the caller may read (metadata)."""
    return calls.page(secrets.list_secrets, query, namespace_id=namespace_id)


@blueprint.operation("GET", "/<secret_id>", item=schemas.Secret, requires="secret:read")
def get_secret(namespace_id: str, secret_id: str) -> dict[str, Any]:
    return calls.item(secrets.get_secret, namespace_id=namespace_id, secret_id=secret_id)


@blueprint.operation("DELETE", "/<secret_id>", requires="secret:delete")
def delete_secret(namespace_id: str, secret_id: str) -> None:
    """Delete a Secret no Agent's harness authentication uses (409 otherwise)."""
    command = secrets.DeleteSecret(
        namespace_id=namespace_id, secret_id=secret_id, if_match=preconditions.expected()
    )
    calls.call(secrets.delete_secret, command, store=calls.context().secrets)
