"""Beat's seeding of maintenance: one observation of every active revision per interval.

A gateway that died while nothing watched is found within one interval, and right after a
fleet starts. The seed's key is the current interval's bucket, the one a revision's own
maintenance chain would use, so a seed and a chain never run the same observation twice.
"""

from __future__ import annotations

from occ.foundation import errors
from occ.reconcile import environment
from occ.state import runtime_observations, values, work_keys, work_queue


def seed(worker: environment.Worker) -> int:
    """Enqueue a maintenance pass, due now, for every active revision on this driver; how many
    active revisions it covered."""
    interval_s = worker.driver.capabilities.maintenance_interval_s
    if not interval_s:
        return 0
    interval_ms = max(int(interval_s * 1000), 1)
    covered = 0
    with worker.database.transaction() as session:
        bucket = int(work_queue.database_now(session).timestamp() * 1000) // interval_ms
        for active in runtime_observations.active_revisions(session, worker.driver.name):
            owner = values.WorkOwner(
                namespace_id=active.namespace_id,
                actor_id=active.actor_id,
                agent_id=active.agent_id,
                revision_id=active.revision_id,
            )
            key = work_keys.revision_maintenance(active.revision_id, bucket)
            try:
                with session.begin_nested():
                    work_queue.enqueue(session, key, owner)
            except errors.IdempotencyConflict:
                continue  # the chain's item for this bucket exists under another owner
            covered += 1
    return covered
