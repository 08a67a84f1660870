"""``/v1/work``: the operator view of the durable work queue (``installation:administer``)."""

from __future__ import annotations

from typing import Any

from occ.controller import operations
from occ.state import keyset, values
from occ.web import calls, pagination
from occ.web.routes import blueprints
from occ.web.schemas import operations as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/work",
    description="Operator view of the work queue.",
    requires="installation:administer",
)


@blueprint.operation(
    "GET", "", query=schemas.WorkQuery, answers=pagination.envelope(schemas.WorkItem)
)
def list_work(query: dict[str, Any]) -> dict[str, Any]:
    """Work items, newest first, filtered by state, Namespace and Agent; paged by cursor (a
    cursor of one filter is refused under another, as on every list)."""
    state = query.get("state")
    work_filter = operations.WorkFilter(
        state=None if state is None else values.WorkState(state),
        namespace_id=query.get("namespace_id"),
        agent_id=query.get("agent_id"),
        window=pagination.window(query, keyset.NEWEST_FIRST),
    )
    return pagination.page(calls.call(operations.list_work, work_filter))


@blueprint.operation("GET", "/<work_id>", item=schemas.WorkItem)
def get_work(work_id: str) -> dict[str, Any]:
    """One work item (its id is its idempotency key, colons included)."""
    return calls.item(operations.get_work, work_id=work_id)
