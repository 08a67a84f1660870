"""``/v1/work``: the operator view of the durable work queue (``installation:administer``)."""

from __future__ import annotations

from typing import Any

from occ.controller import operations
from occ.web import calls
from occ.web.routes import blueprints
from occ.web.schemas import operations as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/work",
    description="Operator view of the work queue.",
    requires="installation:administer",
)


@blueprint.operation("GET", "", query=schemas.WorkQuery, answers=schemas.WorkItemListResponse)
def list_work(query: dict[str, Any]) -> dict[str, Any]:
    """Work items, newest first, filtered by state, Namespace and Agent; paged by cursor."""
    page = calls.filtered(
        operations.list_work, query, "state", "namespace_id", "agent_id", "cursor"
    )
    return schemas.work_page(page)


@blueprint.operation("GET", "/<work_id>", item=schemas.WorkItem)
def get_work(work_id: str) -> dict[str, Any]:
    """One work item (its id is its idempotency key, colons included)."""
    return calls.item(operations.get_work, work_id=work_id)
