"""``/v1/work``: the operator view of the durable work queue (``installation:administer``)."""

from __future__ import annotations

from typing import Any

import marshmallow as ma

from occ.controller import operations
from occ.web import access, calls, routing
from occ.web.schemas import common
from occ.web.schemas import operations as schemas

blueprint = routing.Blueprint(
    "work", __name__, url_prefix="/v1/work", description="Operator view of the work queue."
)


@blueprint.route("", methods=["GET"])
@blueprint.arguments(schemas.WorkQuery, location="query", unknown=ma.RAISE)
@blueprint.response(200, schemas.WorkItemListResponse)
@access.requires("installation:administer")
def list_work(query: dict[str, Any]) -> dict[str, Any]:
    """Work items, newest first, filtered by state, Namespace and Agent; paged by cursor."""
    page = calls.call(
        operations.list_work,
        state=query.get("state"),
        namespace_id=query.get("namespace_id"),
        agent_id=query.get("agent_id"),
        limit=query["limit"],
        cursor=query.get("cursor"),
    )
    return schemas.work_page(page)


@blueprint.route("/<work_id>", methods=["GET"])
@blueprint.response(200, common.envelope(schemas.WorkItem))
@access.requires("installation:administer")
def get_work(work_id: str) -> dict[str, Any]:
    """One work item (its id is its idempotency key, colons included)."""
    return calls.item(operations.get_work, work_id=work_id)
