"""Repairs of active revisions: what the fleet observer admits when a runtime differs.

A repair is a work item admitted through ``occ.state.repairs`` (``revision.MAINTENANCE`` runs
it: observe, repair what is gone, publish the endpoint, record what it saw), owned by whoever
deployed the revision, so it is re-authorized like the deploy. A revision has at most one live
repair; while its runtime stays degraded, repairs are spaced: the first at once, then after
one observation interval, two, four, up to sixteen intervals, until it is seen healthy again,
and at most ``MAX_REPAIRS`` in a row: a runtime whose repairs keep failing or being denied is
left quiet until a person acts.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from occ.foundation import codes
from occ.state import (
    agents,
    deploys,
    observations,
    repairs,
    runtime_observations,
    values,
)
from occ.state.db import Session

MAX_REPAIRS: Final = 5
"""Repairs a runtime gets in a row without being seen ready again (a denied or failed repair
counts): after that, the observer leaves it degraded and quiet until a person acts (a new
deploy, whose revision starts counting afresh, or ``POST …/agents/{id}/repair``)."""
MAX_DOUBLINGS: Final = 4
"""The spacing doubles at most this often: 16 intervals between repairs at the most."""


def repair_spacing_ms(interval_ms: int, repairs: int) -> int:
    """How long after its ``repairs``-th repair a runtime may be repaired again."""
    return interval_ms << min(max(repairs - 1, 0), MAX_DOUBLINGS)


def admit_repair(
    session: Session, due: observations.Due, reason_code: str, *, interval_ms: int, now: dt.datetime
) -> bool:
    """Enqueue a repair of ``due``'s revision and record its runtime ``degraded``, unless a
    repair of it is still live or it is no longer what the Agent should run (another revision
    is active, or a newer deploy was admitted since the tick read it); whether one was
    admitted."""
    revision = due.revision
    agent = agents.get(session, revision.namespace_id, revision.agent_id)
    if agent is None or agent.active_revision_id != revision.id:
        return False
    if deploys.pending_successor(session, revision.agent_id, revision.revision_number):
        return False
    if repairs.live(session, revision.agent_id, revision.id):
        return False
    reason = reason_code if codes.is_code_shaped(reason_code) else codes.Code.REVISION_DEGRADED
    number = runtime_observations.admit_repair(
        session,
        revision.agent_id,
        revision.id,
        reason,
        spacing_ms=lambda repairs: repair_spacing_ms(interval_ms, repairs),
    )
    owner = values.WorkOwner(
        namespace_id=revision.namespace_id,
        actor_id=revision.actor_id,
        agent_id=revision.agent_id,
        revision_id=revision.id,
    )
    repairs.enqueue(session, owner, at=now)
    return number > 0
