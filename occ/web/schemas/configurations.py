"""Configuration representations and request bodies."""

from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import fields

from occ.web.schemas import common


class ConfigurationCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "name": "base",
        "document": {"model": "gpt-5", "temperature": 0.2},
    }

    name = fields.String(required=True, metadata={"example": "base"})
    document = fields.Dict(
        required=True,
        metadata={
            "description": "A JSON object, at most 64 KiB serialized.",
            "example": {"model": "gpt-5", "temperature": 0.2},
        },
    )


class ConfigurationUpdate(common.Request):
    """Give at least one field; every successful update bumps ``generation`` by one."""

    EXAMPLE: ClassVar[dict[str, Any]] = {"document": {"model": "gpt-5", "temperature": 0.7}}

    name = fields.String()
    document = fields.Dict(metadata={"description": "Replaces the whole document."})


class Configuration(common.Updated):
    namespace_id = fields.String(data_key="namespaceId", required=True)
    name = fields.String(required=True)
    document = fields.Dict(required=True)
    generation = fields.Integer(required=True)
