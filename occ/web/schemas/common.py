"""Schemas every resource shares: the envelope, problem details and closed request bodies."""

from __future__ import annotations

from typing import Any, ClassVar

import flask
import marshmallow as ma
from marshmallow import fields


class Request(ma.Schema):
    """A closed request body: unknown fields are an error. ``EXAMPLE`` is a realistic body the
    OpenAPI document shows (every request body has one; it must load)."""

    EXAMPLE: ClassVar[dict[str, Any]]

    class Meta:
        unknown = ma.RAISE


class Stored(ma.Schema):
    """A stored resource's representation: its ``id`` and when it was created."""

    id = fields.String(required=True)
    created_at = fields.DateTime(data_key="createdAt", required=True)


class Updated(Stored):
    """A stored resource that changes in place: ``updatedAt`` too."""

    updated_at = fields.DateTime(data_key="updatedAt", required=True)


class Meta(ma.Schema):
    request_id = fields.String(data_key="requestId", required=True)


class FieldError(ma.Schema):
    pointer = fields.String(required=True)
    message = fields.String(required=True)


class QuotaUsage(ma.Schema):
    name = fields.String(
        required=True,
        metadata={"enum": ["agents", "revisionsPerAgent", "secrets", "configurations"]},
    )
    limit = fields.Integer(required=True)
    used = fields.Integer(required=True)


class Problem(ma.Schema):
    """``application/problem+json``."""

    type = fields.String()
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String(required=True)
    code = fields.String(required=True)
    request_id = fields.String(data_key="requestId", allow_none=True)
    errors = fields.List(fields.Nested(FieldError))
    quota = fields.Nested(
        QuotaUsage, metadata={"description": "the quota a QUOTA_EXCEEDED refusal is about"}
    )


_ENVELOPES: dict[tuple[str, bool], type[ma.Schema]] = {}


def envelope(data: type[ma.Schema], *, many: bool = False) -> type[ma.Schema]:
    """``{"data": <data>, "meta": {"requestId": ...}}`` for a representation schema."""
    key = (data.__name__, many)
    if key not in _ENVELOPES:
        name = data.__name__ + ("ListResponse" if many else "Response")
        _ENVELOPES[key] = ma.Schema.from_dict(
            {
                "data": fields.List(fields.Nested(data), required=True)
                if many
                else fields.Nested(data, required=True),
                "meta": fields.Nested(Meta, required=True),
            },
            name=name,
        )
    return _ENVELOPES[key]


def wrap(data: Any) -> dict[str, Any]:
    """The envelope around a view value (or a list of them)."""
    return {"data": data, "meta": {"request_id": flask.g.get("request_id")}}
