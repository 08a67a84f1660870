"""What a revision's deployment failing for good changes beyond its work row: the failed
candidate must not keep a runtime (nor its credential).

``deployment_failed`` is the deployment kind's terminal-failure effect, applied in the
transaction that fails the item wherever that happens (a pass, a retry at the limit, the
convergence deadline, recovery). It writes only rows, so it is as durable as the failure
itself:

* when the Agent's active pointer already names the failed revision (it moved before the
  failure), the pointer goes back to the newest earlier revision whose deployment activated
  it (or is cleared): the active revision is always the newest one that succeeded, and the
  fleet observer finds that one and repairs it;
* a retirement item is admitted (a repair item (``repairs``) of the failed revision: its
  pass sees the failed deployment and retires the runtime, audited, instead of repairing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.reconcile import revision_snapshot
from occ.state import agents, deploys, repairs, revisions, values
from occ.state.db import Session


def deployment_failed(session: Session, item: values.WorkItem, details: Mapping[str, Any]) -> None:
    """Roll the active pointer back off the failed revision and admit its retirement."""
    owner = item.owner
    if owner.agent_id is None or owner.revision_id is None:
        return
    revision = revisions.get_revision(session, owner.agent_id, owner.revision_id)
    if revision is None:
        return
    agent = agents.get(session, owner.namespace_id, owner.agent_id)
    if agent is None:
        return
    if agent.active_revision_id == revision.id:
        previous = deploys.last_succeeded(session, agent.id, revision.revision_number)
        if previous is None or not agents.activate(
            session, agent.id, expected=revision.id, candidate=previous
        ):
            agents.clear_active(session, agent.id, revision.id)
    # owned like a repair (whoever deployed the revision), with the next free repair id
    repairs.enqueue(session, revision_snapshot.repair_owner(revision))
