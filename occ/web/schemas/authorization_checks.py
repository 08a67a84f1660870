"""Authorization-check request body and representation (of the controller's ``CheckResult``)."""

from __future__ import annotations

from typing import Any, ClassVar

import marshmallow as ma
from marshmallow import fields

from occ import iam
from occ.web.schemas import common


class ResourceInput(common.Request):
    kind = fields.String(required=True, metadata={"enum": sorted(iam.RESOURCE_KINDS)})
    id = fields.String(required=True)


class AuthorizationCheckCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "permission": "agent:deploy",
        "resource": {"kind": "agent", "id": "agt_3c5e7a9b-1d2f-4a6c-8e0b-5f7d9c1e3a27"},
        "namespaceId": "ns_6f1c2a9e-4b7d-4c1e-9a3f-2d8e5b7c1a40",
    }

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
