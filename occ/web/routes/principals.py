"""``/v1/principals``: human and service principals and their API keys."""

from __future__ import annotations

from typing import Any

from occ.controller import principals
from occ.state import iam_policy
from occ.web import calls, locations
from occ.web.routes import blueprints, collections
from occ.web.schemas import iam as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/principals",
    description="Human and service identities and their API keys.",
    requires="installation:administer",
)


collections.declare(
    blueprint,
    item=schemas.Principal,
    id_parameter="principal_id",
    create=collections.Create(
        "create_principal",
        principals.create_principal,
        body=schemas.PrincipalCreate,
        command=lambda body: principals.CreatePrincipal(
            name=body["name"],
            kind=iam_policy.PrincipalKind(body["kind"]),
            namespace_id=body["namespace_id"],
        ),
        doc="Create a human or service principal (a service principal may belong to a Namespace).",
    ),
    list=collections.Listing(
        "list_principals",
        principals.list_principals,
        "Every principal, Agent-owned service principals included (with their ``agentId``).",
    ),
    get=collections.Reading("get_principal", principals.get_principal),
    delete=collections.Delete(
        "disable_principal",
        principals.disable_principal,
        command=lambda principal_id: principals.DisablePrincipal(principal_id=principal_id),
        doc="Disable a principal and revoke its keys (rows are kept). A repeat answers the same.",
    ),
)


@blueprint.operation(
    "POST", "/<principal_id>/api-keys", body=schemas.ApiKeyCreate, created=schemas.NewApiKey
)
@locations.at("principals.revoke_api_key", key_id="id")
def create_api_key(body: dict[str, Any], principal_id: str) -> dict[str, Any]:
    """Mint an API key; the response is the only place its ``key`` ever appears."""
    command = principals.MintApiKey(principal_id=principal_id)
    pepper = calls.context().runtime.settings.api_key_pepper
    return calls.item(principals.mint_api_key, command, pepper=pepper)


@blueprint.operation("GET", "/<principal_id>/api-keys", page=schemas.ApiKey)
def list_api_keys(query: dict[str, Any], principal_id: str) -> dict[str, Any]:
    """The principal's keys (metadata only), revoked ones included."""
    return calls.page(principals.list_api_keys, query, principal_id=principal_id)


@blueprint.operation("DELETE", "/<principal_id>/api-keys/<key_id>", item=schemas.ApiKey)
def revoke_api_key(principal_id: str, key_id: str) -> dict[str, Any]:
    """Revoke a key: it stops authenticating at once. A repeat answers the same."""
    command = principals.RevokeApiKey(principal_id=principal_id, key_id=key_id)
    return calls.item(principals.revoke_api_key, command)
