"""Authorization-check request body and representation (of the controller's ``CheckResult``)."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields

from occ import iam
from occ.web.schemas import common


class ResourceInput(common.Request):
    kind = fields.String(required=True, metadata={"enum": sorted(iam.RESOURCE_KINDS)})
    id = fields.String(required=True)


class AuthorizationCheckCreate(common.Request):
    permission = fields.String(required=True, metadata={"description": "a kind:action"})
    resource = fields.Nested(ResourceInput, required=True)
    namespace_id = fields.String(
        data_key="namespaceId",
        load_default=None,
        allow_none=True,
        metadata={"description": "the resource's Namespace (not for installation, namespace)"},
    )
    principal_id = fields.String(
        data_key="principalId",
        load_default=None,
        allow_none=True,
        metadata={"description": "another principal (needs installation:administer)"},
    )


class CheckedResource(ma.Schema):
    kind = fields.String(required=True)
    id = fields.String(required=True)


class AuthorizationCheck(ma.Schema):
    principal_id = fields.String(data_key="principalId", required=True)
    permission = fields.String(required=True)
    resource = fields.Nested(CheckedResource, required=True)
    namespace_id = fields.String(
        data_key="namespaceId", attribute="resource.namespace_id", allow_none=True
    )
    allowed = fields.Boolean(required=True)
    reason = fields.String(required=True, metadata={"enum": list(iam.Reason)})
