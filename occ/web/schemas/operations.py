"""Operator views: work items and audit events, their query parameters and paged envelopes.

Representations dump ``occ.state.values.WorkItem`` and ``occ.state.audit.AuditEvent`` values.
"""

from __future__ import annotations

from typing import Any

import flask
import marshmallow as ma
from marshmallow import fields, validate

from occ.controller import operations
from occ.foundation import ids
from occ.state import audit, values, work_reads
from occ.state.work_keys import WorkKind
from occ.web.schemas import common

WORK_STATES = [state.value for state in values.WorkState]
WORK_KINDS = [kind.value for kind in WorkKind]
AUDIT_KINDS = sorted(kind.value for kind in audit.EventKind)
AUDIT_OUTCOMES = [outcome.value for outcome in audit.EventOutcome]


def _id(kind: str) -> validate.Regexp:
    return validate.Regexp(ids.pattern(kind), error=ids.refusal(kind))


def _limit() -> fields.Integer:
    return fields.Integer(
        load_default=operations.DEFAULT_LIMIT,
        strict=False,
        validate=validate.Range(min=1, max=operations.MAX_LIMIT),
        metadata={"description": "Most items in the page."},
    )


def _exact_work_id(value: str) -> None:
    """The exact shapes the pattern outlines (``operations.valid_work_id``)."""
    if not operations.valid_work_id(value):
        raise ma.ValidationError("must be a work id")


class Query(ma.Schema):
    """Query parameters are a closed set too: an unknown one is an error."""

    class Meta:
        unknown = ma.RAISE


class WorkQuery(Query):
    state = fields.String(validate=validate.OneOf(WORK_STATES))
    namespace_id = fields.String(data_key="namespaceId", validate=_id("namespace"))
    agent_id = fields.String(data_key="agentId", validate=_id("agent"))
    limit = _limit()
    cursor = fields.String(
        validate=validate.Length(min=1, max=512),
        metadata={"description": "``meta.nextCursor`` of the previous page."},
    )


class AuditEventQuery(Query):
    namespace_id = fields.String(data_key="namespaceId", validate=_id("namespace"))
    resource_id = fields.String(
        data_key="resourceId",
        validate=validate.Regexp(operations.RESOURCE_ID_PATTERN, error="must be an occ id"),
    )
    work_id = fields.String(
        data_key="workId",
        validate=_exact_work_id,
        metadata={"pattern": operations.WORK_ID_PATTERN, "maxLength": operations.WORK_ID_MAX},
    )
    kind = fields.String(validate=validate.OneOf(AUDIT_KINDS))
    before = fields.Integer(
        strict=False,
        validate=validate.Range(min=1, max=operations.SEQUENCE_MAX),
        metadata={
            "description": "Only events with a smaller sequence "
            "(``meta.nextBefore`` of the previous "
            "page)."
        },
    )
    limit = _limit()


class WorkItem(common.Updated):
    """A work item as operators see it (a ``WorkItem`` value never holds its claim token)."""

    kind = fields.String(required=True, dump_only=True, validate=validate.OneOf(WORK_KINDS))
    namespace_id = fields.String(
        data_key="namespaceId", attribute="owner.namespace_id", required=True
    )
    agent_id = fields.String(
        data_key="agentId", attribute="owner.agent_id", required=True, allow_none=True
    )
    revision_id = fields.String(
        data_key="revisionId", attribute="owner.revision_id", required=True, allow_none=True
    )
    actor_id = fields.String(data_key="actorId", attribute="owner.actor_id", required=True)
    namespace_target = fields.String(data_key="namespaceTarget", required=True, allow_none=True)
    agent_target = fields.String(data_key="agentTarget", required=True, allow_none=True)
    state = fields.String(required=True, validate=validate.OneOf(WORK_STATES))
    attempt_count = fields.Integer(data_key="attemptCount", required=True)
    available_at = fields.DateTime(data_key="availableAt", required=True)
    lease_expires_at = fields.DateTime(data_key="leaseExpiresAt", required=True, allow_none=True)
    completed_at = fields.DateTime(data_key="completedAt", required=True, allow_none=True)
    reason_code = fields.String(data_key="reasonCode", required=True, allow_none=True)
    result_data = fields.Dict(data_key="resultData", required=True, allow_none=True)
    last_progress_code = fields.String(data_key="lastProgressCode", required=True, allow_none=True)
    last_progress_at = fields.DateTime(data_key="lastProgressAt", required=True, allow_none=True)

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        # the targets follow from the item's kind; the value does not repeat them
        if attr == "namespace_target":
            return work_reads.targets(obj.kind)[0]
        if attr == "agent_target":
            return work_reads.targets(obj.kind)[1]
        return super().get_attribute(obj, attr, default)


class AuditEvent(ma.Schema):
    id = fields.String(required=True)
    sequence = fields.Integer(required=True)
    occurred_at = fields.DateTime(data_key="occurredAt", required=True)
    kind = fields.String(required=True, metadata={"enum": AUDIT_KINDS})
    action = fields.String(required=True)
    actor_id = fields.String(data_key="actorId", required=True)
    namespace_id = fields.String(data_key="namespaceId", required=True, allow_none=True)
    resource_kind = fields.String(data_key="resourceKind", required=True, allow_none=True)
    resource_id = fields.String(data_key="resourceId", required=True, allow_none=True)
    work_id = fields.String(data_key="workId", required=True, allow_none=True)
    outcome = fields.String(required=True, metadata={"enum": AUDIT_OUTCOMES})
    details = fields.Dict(required=True)


class AuditPageMeta(common.Meta):
    next_before = fields.Integer(data_key="nextBefore", required=True, allow_none=True)


class AuditEventListResponse(ma.Schema):
    data = fields.List(fields.Nested(AuditEvent), required=True)
    meta = fields.Nested(AuditPageMeta, required=True)


def audit_page(page: operations.AuditPage) -> dict[str, Any]:
    """The envelope of a page of audit events."""
    return {
        "data": page.items,
        "meta": {"request_id": flask.g.get("request_id"), "next_before": page.next_before},
    }
