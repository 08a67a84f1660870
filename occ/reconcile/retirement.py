"""What a revision's deployment failing for good changes beyond its work row: the failed
candidate must not keep a runtime (nor its credential).

``deployment_failed`` is the deployment kind's terminal-failure effect, applied in the
transaction that fails the item wherever that happens (a pass, a retry at the limit, the
convergence deadline, recovery). It writes only rows, so it is as durable as the failure
itself:

* when the Agent's active pointer already names the failed revision (it moved before the
  failure), the pointer goes back to the newest earlier revision whose deployment activated
  it, unless that one pins a managed account occ recorded withdrawn (then, or with none, it is
  cleared): the active revision is always the newest one that succeeded, and the fleet
  observer finds that one and repairs it;
* a retirement item is admitted (a repair item (``repairs``) of the failed revision: its
  pass sees the failed deployment and retires the runtime, audited, instead of repairing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from occ.drivers.account import ownership
from occ.reconcile import account_credentials, revision_snapshot
from occ.state import accounts, agents, deploys, repairs, revisions, values
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
        agents.lock_namespace(session, agent.namespace_id)  # a withdrawal's first lock
        previous = deploys.last_succeeded(session, agent.id, revision.revision_number)
        if (
            previous is None
            or _withdrawn_source(session, agent.id, previous)
            or not agents.activate(session, agent.id, expected=revision.id, candidate=previous)
        ):
            agents.clear_active(session, agent.id, revision.id)
    # owned like a repair (whoever deployed the revision), with the next free repair id
    repairs.enqueue(session, revision_snapshot.repair_owner(revision))


def _withdrawn_source(session: Session, agent_id: str, revision_id: str) -> bool:
    """Whether the revision pins a managed account occ recorded withdrawn (or holds no more):
    the pointer never goes back to it. Read under the account's shared lock, after the
    Namespace's, as a withdrawal being recorded takes them: either it commits first and is
    seen here, or it waits and finds the Agent on the revision, which it then stops."""
    revision = revisions.get_revision(session, agent_id, revision_id)
    pinned = None if revision is None else ownership.pinned(revision.harness_auth)
    if revision is None or pinned is None:
        return False
    account = accounts.get_shared(session, revision.namespace_id, pinned.account_id)
    return account_credentials.recorded_refusal(account) is not None
