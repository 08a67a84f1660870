"""``/v1/audit-events``: the audit ledger, newest first (``installation:read``)."""

from __future__ import annotations

from typing import Any

from occ.controller import operations
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
    page = calls.filtered(
        operations.list_audit_events,
        query,
        "namespace_id",
        "resource_id",
        "work_id",
        "kind",
        "before",
    )
    return schemas.audit_page(page)
