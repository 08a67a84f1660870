"""IAM representations and request bodies: principals, API keys, Roles, bindings, restrictions.

Representations dump the ``occ.state.iam_policy`` and ``occ.state.api_keys`` values (a new
key is the controller's ``NewApiKey``, the only one that carries the plaintext).
"""

from __future__ import annotations

from marshmallow import fields, validate

from occ.state import iam_policy
from occ.web.schemas import common

PRINCIPAL_KINDS = tuple(iam_policy.PrincipalKind)

# -- principals and API keys --------------------------------------------------------------------


class PrincipalCreate(common.Request):
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
