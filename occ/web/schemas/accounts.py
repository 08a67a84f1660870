"""Managed-account representations and the issue request: names and Backend bindings, never a
token."""

from __future__ import annotations

from typing import Any, ClassVar

import marshmallow as ma
from marshmallow import fields

from occ.web.schemas import common


class AccountIssue(common.Request):
    EXAMPLE: ClassVar[dict[str, Any]] = {"name": "team-codex", "workspace": "research"}

    name = fields.String(required=True, metadata={"example": "team-codex"})
    workspace = fields.String(
        required=True,
        metadata={"description": "The account Backend's workspace.", "example": "research"},
    )


class Account(common.Updated):
    """An issued account: its Backend binding and whether its Backend withdrew it."""

    namespace_id = fields.String(data_key="namespaceId", required=True)
    name = fields.String(required=True)
    backend_id = fields.String(
        data_key="backendId",
        required=True,
        metadata={"description": "The account Backend's stable id."},
    )
    driver = fields.String(
        required=True, metadata={"description": "The account Backend driver (``standin``)."}
    )
    workspace = fields.String(required=True)
    withdrawn_at = fields.DateTime(
        data_key="withdrawnAt",
        required=True,
        allow_none=True,
        metadata={"description": "When occ learnt that the Backend withdrew it (null: live)."},
    )


class AccountWithdrawalBody(common.Request):
    """No body (an empty JSON object is accepted too)."""

    EXAMPLE: ClassVar[dict[str, Any]] = {}


class AccountWithdrawal(ma.Schema):
    """A recorded withdrawal: the account, and the Agents whose stop it admitted."""

    account = fields.Nested(Account, required=True)
    agent_ids = fields.List(fields.String(), data_key="agentIds", required=True)
