"""Claim-fenced finalizers that remove rows the application role may not delete itself.

Each wraps a ``SECURITY DEFINER`` function of the migration; the function does nothing
unless the given claim is live, and then this module raises ``ClaimLost``.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from occ import errors
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
