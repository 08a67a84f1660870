"""Secret representations and request bodies: the value goes in and never comes out."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import fields

from occ.web.schemas import common


class SecretCreate(common.Request):
    name = fields.String(required=True, metadata={"example": "model-token"})
    value = fields.String(
        required=True,
        load_only=True,
        metadata={
            "description": "1 to 64 KiB of UTF-8; write-only, never returned.",
            "writeOnly": True,
            "example": "an-example-token",
        },
    )


class Secret(ma.Schema):
    """A Secret's metadata; there is no representation of its value."""

    id = fields.String(required=True)
    namespace_id = fields.String(data_key="namespaceId", required=True)
    name = fields.String(required=True)
    created_at = fields.DateTime(data_key="createdAt", required=True)
    updated_at = fields.DateTime(data_key="updatedAt", required=True)
