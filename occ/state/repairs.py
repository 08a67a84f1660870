"""Admitting a repair: ``revision_maintenance`` work of one revision, one live at a time.

Whoever asks for one (the fleet observer on a difference, a person through the API, a failed
deployment's retirement for the revision it left active) admits it here. A repair's id is its
revision and the second it was admitted in, or the next free second when an earlier repair of
the revision ended within that one.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import orm

from occ.state import values, work_keys, work_queue


def live(session: orm.Session, agent_id: str, revision_id: str) -> bool:
    """Whether a repair of the Agent's revision is queued or claimed."""
    return work_queue.has_live(
        session, agent_id, revision_id, work_keys.WorkKind.REVISION_MAINTENANCE
    )


def enqueue(
    session: orm.Session, owner: values.WorkOwner, *, at: dt.datetime | None = None
) -> work_keys.WorkKey:
    """Admit a repair of ``owner``'s revision in the caller's transaction (at ``at``, else now
    on the database clock); its key."""
    revision_id = owner.revision_id
    if revision_id is None:
        raise ValueError("a repair is of a revision")
    moment = at if at is not None else work_queue.database_now(session)
    key = work_queue.unused_key(
        session,
        lambda second: work_keys.revision_maintenance(revision_id, second),
        int(moment.timestamp()),
    )
    work_queue.enqueue(session, key, owner)
    return key
