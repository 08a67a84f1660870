"""The ``SECURITY DEFINER`` functions of deletions: claim-fenced finalizers that remove rows
the application role may not delete itself, and the requeue of a deletion that failed for good.

A finalizer's function does nothing unless the given claim is live, and then this module raises
``ClaimLost``.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import errors
from occ.state import values

_FINALIZE_AGENT_DELETION = sa.text(
    "SELECT occ.finalize_agent_deletion(:work_id, CAST(:token AS uuid))"
)


def finalize_agent_deletion(session: orm.Session, claim: values.Claim) -> None:
    """Remove a deleting Agent with its revisions, service principal, keys, IAM references and
    work rows, under the live claim of its ``agent:<id>:reconcile:deleted`` work item."""
    removed = session.execute(
        _FINALIZE_AGENT_DELETION, {"work_id": claim.work_id, "token": str(claim.token)}
    ).scalar_one()
    if not removed:
        raise errors.ClaimLost(claim.work_id)


_RETRY_FAILED_DELETION = sa.text("SELECT occ.retry_failed_deletion(:work_id, :actor_id)")


def requeue_deletion(session: orm.Session, work_id: str, actor_id: str) -> bool:
    """Requeue a permanently failed Namespace or Agent deletion for ``actor_id``.

    The item restarts its attempts and convergence deadline and takes the new actor. False
    unless the item is ``failed_permanent`` and its Namespace or Agent is still deleting.
    """
    return bool(
        session.execute(
            _RETRY_FAILED_DELETION, {"work_id": work_id, "actor_id": actor_id}
        ).scalar_one()
    )
