"""Secret representations and request bodies: the value goes in and never comes out."""

from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import fields

from occ.web.schemas import common


class SecretCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {"name": "model-token", "value": "an-example-token"}

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


class Secret(common.Updated):
    """A Secret's metadata; there is no representation of its value."""

    namespace_id = fields.String(data_key="namespaceId", required=True)
    name = fields.String(required=True)
