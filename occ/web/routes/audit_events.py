"""``/v1/audit-events``: the audit ledger, newest first (``installation:read``)."""

from __future__ import annotations

from typing import Any

from occ.controller import operations
from occ.state import audit
from occ.web import calls
from occ.web.routes import blueprints
from occ.web.schemas import operations as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/audit-events",
    description="The append-only audit ledger.",
)


@blueprint.operation(
    "GET",
    "",
    query=schemas.AuditEventQuery,
    answers=schemas.AuditEventListResponse,
    requires="installation:read",
)
def list_audit_events(query: dict[str, Any]) -> dict[str, Any]:
    """Audit events filtered by Namespace, resource, work item and kind; paged by sequence."""
    kind = query.get("kind")
    audit_filter = operations.AuditFilter(
        namespace_id=query.get("namespace_id"),
        resource_id=query.get("resource_id"),
        work_id=query.get("work_id"),
        kind=None if kind is None else audit.EventKind(kind),
        before=query.get("before"),
        limit=query["limit"],
    )
    return schemas.audit_page(calls.call(operations.list_audit_events, audit_filter))
