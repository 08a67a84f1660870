"""``/v1/audit-events``: the audit ledger, newest first (``installation:read``)."""

from __future__ import annotations

from typing import Any

import marshmallow as ma

from occ.controller import operations
from occ.web import access, calls, routing
from occ.web.schemas import operations as schemas

blueprint = routing.Blueprint(
    "audit_events",
    __name__,
    url_prefix="/v1/audit-events",
    description="The append-only audit ledger.",
)


@blueprint.route("", methods=["GET"])
@blueprint.arguments(schemas.AuditEventQuery, location="query", unknown=ma.RAISE)
@blueprint.response(200, schemas.AuditEventListResponse)
@access.requires("installation:read")
def list_audit_events(query: dict[str, Any]) -> dict[str, Any]:
    """Audit events filtered by Namespace, resource, work item and kind; paged by sequence."""
    page = calls.call(
        operations.list_audit_events,
        namespace_id=query.get("namespace_id"),
        resource_id=query.get("resource_id"),
        work_id=query.get("work_id"),
        kind=query.get("kind"),
        before=query.get("before"),
        limit=query["limit"],
    )
    return schemas.audit_page(page)
