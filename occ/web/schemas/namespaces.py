"""Namespace and Installation representations (of ``occ.state`` values) and request bodies."""

from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import fields

from occ.state import namespaces
from occ.web.schemas import common


class NamespaceCreate(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {"name": "team-a"}

    name = fields.String(required=True, metadata={"example": "team-a"})
    existing_namespace = fields.String(
        data_key="existingNamespace", load_default=None, metadata={"example": "team-a-prod"}
    )


class Namespace(common.Updated):
    name = fields.String(required=True)
    status = fields.String(required=True, metadata={"enum": list(namespaces.NamespaceStatus)})
    existing_namespace = fields.String(data_key="existingNamespace", allow_none=True)


class Installation(common.Stored):
    name = fields.String(required=True)
