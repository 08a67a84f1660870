"""The admission of a deletion with retry and audited takeover, shared by Agents and Namespaces.

The first request marks the resource ``deleting`` (its use case does) and enqueues its one
deletion work item. A repeat while that item is queued or claimed changes nothing; a repeat
without the item (an operator's repair) enqueues it again; a repeat after it failed
permanently requeues it for the caller, who takes it over from a different original actor.
Each of these is audited as a ``<kind>s.delete`` mutation naming the work item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from occ.foundation import errors
from occ.state import audit, values, work_keys, work_queue
from occ.state.db import Session


@dataclass(frozen=True, kw_only=True)
class Deletion:
    """One resource's deletion as a request admits it."""

    resource_kind: str
    """``agent`` or ``namespace``: the audit action is ``<resource_kind>s.delete``."""
    resource_id: str
    key: work_keys.WorkKey
    owner: values.WorkOwner
    """The work's owner: the resource's Namespace and the caller."""
    authorization: Mapping[str, Any]
    deleting: str
    """The resource's ``deleting`` status."""
    requeue: Callable[[Session, str, str], bool]
    """The state function requeueing a failed item (``session, work_id, actor_id``)."""
    what: str
    """The resource's name in a conflict message (``Agent``, ``Namespace``)."""


def admit(
    session: Session,
    deletion: Deletion,
    previous_status: str,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Enqueue the deletion's work item and audit the move from ``previous_status`` to
    ``deleting`` (with ``details``, if any)."""
    work_queue.enqueue(session, deletion.key, deletion.owner)
    moved = {
        "status": deletion.deleting,
        "previousStatus": previous_status,
        **(details or {}),
        "authorization": deletion.authorization,
    }
    _audit(session, deletion, str(deletion.key), moved)


def repeat(session: Session, deletion: Deletion) -> None:
    """A request for a resource already ``deleting``: admit its missing work item again,
    requeue a failed one, or (queued or claimed) change nothing.

    Raises:
        Conflict: the failed item could not be requeued.
    """
    work = work_queue.get(session, deletion.key)
    if work is None:
        admit(session, deletion, deletion.deleting)
    elif work.state == values.WorkState.FAILED_PERMANENT:
        _requeue(session, deletion, work)


def _requeue(session: Session, deletion: Deletion, work: values.WorkItem) -> None:
    actor_id = deletion.owner.actor_id
    previous_actor = work.owner.actor_id
    if not deletion.requeue(session, work.id, actor_id):
        raise errors.Conflict(
            f"the deletion could not be requeued; read the {deletion.what} and retry"
        )
    takeover = previous_actor != actor_id
    details: dict[str, Any] = {
        "status": deletion.deleting,
        "requeued": True,
        "takeover": takeover,
        "previousReasonCode": work.reason_code,
        "authorization": dict(deletion.authorization),
    }
    if takeover:
        details["previousActorId"] = previous_actor
    _audit(session, deletion, work.id, details)


def _audit(session: Session, deletion: Deletion, work_id: str, details: Mapping[str, Any]) -> None:
    audit.mutation(
        session,
        action=f"{deletion.resource_kind}s.delete",
        actor_id=deletion.owner.actor_id,
        namespace_id=deletion.owner.namespace_id,
        resource_kind=deletion.resource_kind,
        resource_id=deletion.resource_id,
        work_id=work_id,
        details=details,
    )
