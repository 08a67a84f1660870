"""Namespace and Installation representations (of ``occ.state`` values) and request bodies."""

from __future__ import annotations

from typing import Any, ClassVar

import marshmallow as ma
from marshmallow import fields, validate

from occ.controller import quotas
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


class Quota(ma.Schema):
    limit = fields.Integer(required=True)
    used = fields.Integer(required=True, metadata={"description": "what the Namespace uses"})
    overridden = fields.Boolean(
        required=True,
        metadata={"description": "the Namespace's own limit (false: the installation default)"},
    )


class NamespaceQuotas(ma.Schema):
    namespace_id = fields.String(data_key="namespaceId", required=True)
    agents = fields.Nested(Quota, required=True)
    revisions_per_agent = fields.Nested(Quota, data_key="revisionsPerAgent", required=True)
    secrets = fields.Nested(Quota, required=True)
    configurations = fields.Nested(Quota, required=True)


def _limit(description: str, data_key: str | None = None) -> fields.Integer:
    return fields.Integer(
        data_key=data_key,
        allow_none=True,
        strict=True,  # 1.5 or "5" is refused, not rounded or parsed
        validate=validate.Range(min=0, max=quotas.LIMIT_MAX),
        metadata={"description": description + " (null: the installation default)"},
    )


class QuotasUpdate(common.Request):
    """The limits to change; a quota not named stays as it is."""

    EXAMPLE: ClassVar[dict[str, Any]] = {"agents": 50, "revisionsPerAgent": 2000}

    agents = _limit("Agents the Namespace may hold")
    revisions_per_agent = _limit(
        "revisions each of its Agents may make", data_key="revisionsPerAgent"
    )
    secrets = _limit("Secrets the Namespace may hold")
    configurations = _limit("Configurations the Namespace may hold")
