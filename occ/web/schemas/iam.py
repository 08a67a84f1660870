"""IAM representations and request bodies: principals, API keys, Roles, bindings, restrictions.

Representations dump the ``occ.state.iam_policy`` and ``occ.state.api_keys`` values (a new
key is the controller's ``NewApiKey``, the only one that carries the plaintext).
"""

from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import fields, validate

from occ.state import iam_policy
from occ.web.schemas import common

PRINCIPAL_KINDS = tuple(iam_policy.PrincipalKind)

# -- principals and API keys --------------------------------------------------------------------


class PrincipalCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "name": "ci-deployer",
        "kind": "service",
        "namespaceId": "ns_6f1c2a9e-4b7d-4c1e-9a3f-2d8e5b7c1a40",
    }

    name = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(PRINCIPAL_KINDS))
    namespace_id = fields.String(data_key="namespaceId", load_default=None, allow_none=True)


class Principal(common.Stored):
    name = fields.String(required=True)
    kind = fields.String(required=True, metadata={"enum": list(PRINCIPAL_KINDS)})
    namespace_id = fields.String(data_key="namespaceId", allow_none=True)
    agent_id = fields.String(data_key="agentId", allow_none=True)
    disabled_at = fields.DateTime(data_key="disabledAt", allow_none=True)


class ApiKeyCreate(common.Request):
    """An empty object: the key takes nothing from the caller."""

    EXAMPLE: ClassVar[dict[str, Any]] = {}


class ApiKey(common.Stored):
    principal_id = fields.String(data_key="principalId", required=True)
    revoked_at = fields.DateTime(data_key="revokedAt", allow_none=True)
    last_used_at = fields.DateTime(data_key="lastUsedAt", allow_none=True)


class NewApiKey(common.Stored):
    """A new key: ``key`` (``occ_<keyId>_<secret>``) is shown this once and never again."""

    key = fields.String(required=True)
    principal_id = fields.String(data_key="principalId", required=True)


# -- roles, access bindings, restrictions -------------------------------------------------------


class RoleCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "name": "agent-operator",
        "permissions": ["agent:read", "agent:deploy", "agent:operate"],
        "namespaceId": "ns_6f1c2a9e-4b7d-4c1e-9a3f-2d8e5b7c1a40",
    }

    name = fields.String(required=True)
    permissions = fields.List(fields.String(), required=True)
    namespace_id = fields.String(data_key="namespaceId", load_default=None, allow_none=True)


class Role(common.Stored):
    name = fields.String(required=True)
    namespace_id = fields.String(data_key="namespaceId", allow_none=True)
    permissions = fields.List(fields.String(), required=True)
    deleted_at = fields.DateTime(data_key="deletedAt", allow_none=True)


class ResourceRef(common.Request):
    """One exact resource: ``{kind, id}``."""

    kind = fields.String(required=True)
    id = fields.String(required=True)


class AccessBindingCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "roleId": "rol_2d4f6a8c-0e1b-4c3d-9f5a-7b9d1e3f5a61",
        "principalId": "prn_7e1a3c5d-9b2f-4d6e-a8c0-2b4d6f8a0c13",
        "namespaceId": "ns_6f1c2a9e-4b7d-4c1e-9a3f-2d8e5b7c1a40",
    }

    role_id = fields.String(data_key="roleId", required=True)
    principal_id = fields.String(data_key="principalId", required=True)
    namespace_id = fields.String(data_key="namespaceId", load_default=None, allow_none=True)
    resource = fields.Nested(ResourceRef, load_default=None, allow_none=True)


class AccessBinding(common.Stored):
    role_id = fields.String(data_key="roleId", required=True)
    principal_id = fields.String(data_key="principalId", required=True)
    namespace_id = fields.String(data_key="namespaceId", allow_none=True)
    resource = fields.Nested(ResourceRef, allow_none=True)
    created_by = fields.String(data_key="createdBy", required=True)
    revoked_at = fields.DateTime(data_key="revokedAt", allow_none=True)


class RestrictionCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "permission": "secret:operate",
        "principalId": "prn_7e1a3c5d-9b2f-4d6e-a8c0-2b4d6f8a0c13",
        "namespaceId": "ns_6f1c2a9e-4b7d-4c1e-9a3f-2d8e5b7c1a40",
    }

    permission = fields.String(required=True)
    principal_id = fields.String(data_key="principalId", load_default=None, allow_none=True)
    namespace_id = fields.String(data_key="namespaceId", load_default=None, allow_none=True)
    resource_id = fields.String(data_key="resourceId", load_default=None, allow_none=True)


class Restriction(common.Stored):
    permission = fields.String(required=True)
    principal_id = fields.String(data_key="principalId", allow_none=True)
    namespace_id = fields.String(data_key="namespaceId", allow_none=True)
    resource_id = fields.String(data_key="resourceId", allow_none=True)
    created_by = fields.String(data_key="createdBy", required=True)
