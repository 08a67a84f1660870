"""Work rows as the queue's values: a row of ``occ.controller_work`` (by column name) as a
``WorkItem``, a ``Claim`` or its ``WorkOwner``; the one place that reads the table's columns into
them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from occ.state import values
from occ.state.work_keys import WorkKey

Row = Mapping[Any, Any]
"""A row by column name: SQLAlchemy's ``RowMapping`` or a hot statement's dict."""


def owner_of(row: Row) -> values.WorkOwner:
    """Who owns the item of the row: its Namespace, actor, Agent and revision."""
    return values.WorkOwner(
        namespace_id=row["namespace_id"],
        actor_id=row["actor_id"],
        agent_id=row["agent_id"],
        revision_id=row["revision_id"],
    )


def key_of(row: Row) -> WorkKey:
    """The work key of the row's id, checked against its kind."""
    key = WorkKey.parse(row["id"])
    if key.kind != row["kind"]:
        raise ValueError(f"work item {row['id']} has kind {row['kind']}")  # the CHECK prevents it
    return key


def item_of(row: Row) -> values.WorkItem:
    """The item a whole row of the table is."""
    return values.WorkItem(
        id=row["id"],
        key=key_of(row),
        owner=owner_of(row),
        state=values.WorkState(row["state"]),
        attempt_count=row["attempt_count"],
        available_at=row["available_at"],
        claimed=row["claim_token"] is not None,
        started=row["started_at"] is not None,
        lease_expires_at=row["lease_expires_at"],
        completed_at=row["completed_at"],
        reason_code=row["reason_code"],
        result_data=row["result_data"],
        last_progress_code=row["last_progress_code"],
        last_progress_at=row["last_progress_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def claim_of(row: Row) -> values.Claim:
    """The claim of a row with a claim's columns (a start's, a renewal's, a claim's)."""
    token = row["claim_token"]
    return values.Claim(
        work_id=row["id"],
        key=key_of(row),
        token=token if isinstance(token, uuid.UUID) else uuid.UUID(str(token)),
        owner=owner_of(row),
        attempt_count=row["attempt_count"],
        claimed_at=row["claimed_at"],
        lease_expires_at=row["lease_expires_at"],
        created_at=row["created_at"],
        running=row["started_at"] is not None,
    )
