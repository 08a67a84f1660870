"""The work queue's steps as a test takes them, each in a transaction of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models, values, work_claims, work_queue
from occ.state.db import Database
from tests.support import rows


def enqueue_revision(
    session: orm.Session, namespace_id: str, agent_id: str, actor_id: str, number: int
) -> str:
    """Insert revision ``number`` of ``agent_id`` and enqueue its reconcile work; the work id."""
    revision_id = rows.revision(
        session, namespace_id=namespace_id, agent_id=agent_id, actor_id=actor_id, number=number
    )
    key, owner = rows.revision_work(namespace_id, agent_id, revision_id, actor_id)
    work_queue.enqueue(session, key, owner)
    return str(key)


_FILL: Final = sa.text("""
    WITH made AS (
      INSERT INTO occ.namespaces (id, name, created_by, status)
      SELECT 'ns_' || gen_random_uuid(), 'backlog-' || n, :actor, 'provisioning'
        FROM generate_series(1, :count) n
      RETURNING id
    )
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, actor_id, namespace_target, available_at, created_at, updated_at)
    SELECT 'namespace:' || id || ':reconcile:ready', 'namespace_ready', id, :actor, 'ready',
           clock_timestamp() - interval '1 hour' + n * interval '1 millisecond',
           clock_timestamp(), clock_timestamp()
      FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM made) numbered
""")


def fill(owner: orm.Session, actor_id: str, count: int) -> None:
    """``count`` provisioning Namespaces of ``actor_id``, each with its ready work queued and
    due, a millisecond apart, in one statement (run as the owner: bulk rows for a deep queue),
    then the queue's statistics, taken as autovacuum would take them."""
    owner.execute(_FILL, {"actor": actor_id, "count": count})
    owner.execute(sa.text("ANALYZE occ.controller_work"))


_REPAIRS: Final = sa.text("""
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, available_at, created_at,
       updated_at)
    SELECT 'agent_revision:' || r.id || ':maintenance:' || n, 'revision_maintenance',
           r.namespace_id, r.agent_id, r.id, :actor,
           clock_timestamp() - interval '2 hours' + n * interval '1 millisecond',
           clock_timestamp(), clock_timestamp()
      FROM occ.agent_revisions r CROSS JOIN generate_series(1, :per_lane) n
     WHERE r.id = ANY(:revisions)
""")


def fill_repairs(
    owner: orm.Session, namespace_id: str, actor_id: str, *, lanes: int, per_lane: int
) -> list[str]:
    """``lanes`` Agents of the Namespace, each with a revision and ``per_lane`` repairs of it
    queued and due (older than ``fill``'s items), then the queue's statistics; the Agent ids."""
    agents, revisions = [], []
    for n in range(lanes):
        agent_id = rows.agent(owner, namespace_id=namespace_id, name=f"repaired-{n}")
        agents.append(agent_id)
        revisions.append(
            rows.revision(
                owner, namespace_id=namespace_id, agent_id=agent_id, actor_id=actor_id, number=1
            )
        )
    queue_repairs(owner, actor_id, revisions, per_lane=per_lane)
    owner.execute(sa.text("ANALYZE occ.controller_work"))
    return agents


def queue_repairs(
    owner: orm.Session, actor_id: str, revisions: list[str], *, per_lane: int
) -> None:
    """``per_lane`` repairs of each of ``revisions`` queued and due, a millisecond apart and
    older than ``fill``'s items, in one statement (run as the owner)."""
    owner.execute(_REPAIRS, {"actor": actor_id, "per_lane": per_lane, "revisions": revisions})


@dataclass(frozen=True)
class Queue:
    """The queue seen as occ_app (``db``) under ``policy``; ``owner_db`` moves its clocks."""

    db: Database
    owner_db: Database
    policy: values.QueuePolicy

    def enqueue_namespace(self, namespace_id: str, actor: str, target: str = "ready") -> str:
        """Enqueue the Namespace's work towards ``target``; the work id."""
        key, owner = rows.namespace_work(namespace_id, actor, target)
        with self.db.transaction() as session:
            work_queue.enqueue(session, key, owner)
        return str(key)

    def claim_one(self, policy: values.QueuePolicy | None = None) -> values.Claim:
        """Claim exactly one dispatch."""
        with self.db.transaction() as session:
            claims = work_claims.claim(session, policy or self.policy, limit=1)
        assert len(claims) == 1
        return claims[0]

    def run_one(self, policy: values.QueuePolicy | None = None) -> values.Claim:
        """Claim one dispatch and start its run; the run's claim."""
        dispatch = self.claim_one(policy)
        with self.db.transaction() as session:
            run = work_queue.start(session, policy or self.policy, dispatch)
        assert run is not None
        return run

    def recover(self, policy: values.QueuePolicy | None = None) -> values.RecoveryReport:
        with self.db.transaction() as session:
            return work_queue.recover_stale(session, policy or self.policy)

    def item(self, work_id: str) -> values.WorkItem:
        with self.db.transaction() as session:
            item = work_queue.get(session, work_id)
        assert item is not None
        return item

    def progress(self, work_id: str) -> tuple[values.WorkState, int, str | None]:
        """The item's state, attempts counted and last progress code."""
        item = self.item(work_id)
        return (item.state, item.attempt_count, item.last_progress_code)

    def evidence_codes(self, work_id: str) -> list[str]:
        """The reason codes of the item's reconcile audit events, oldest first."""
        with self.db.transaction() as session:
            return list(
                session.execute(
                    sa.select(models.AuditEvent.details["reasonCode"].astext)
                    .where(
                        models.AuditEvent.work_id == work_id,
                        models.AuditEvent.action == "reconcile",
                    )
                    .order_by(models.AuditEvent.sequence)
                ).scalars()
            )

    def expire(self, work_id: str) -> None:
        """Move a lease into the past, as if the worker had stalled for longer than its lease."""
        self._set(work_id, "lease_expires_at = clock_timestamp() - interval '1 s'")

    def make_available(self, work_id: str) -> None:
        """Make a waiting item claimable now."""
        self._set(work_id, "available_at = clock_timestamp()")

    def age(self, work_id: str, interval: str) -> None:
        """Move the item's creation ``interval`` into the past (its deadline runs from it)."""
        self._set(work_id, f"created_at = clock_timestamp() - interval '{interval}'")

    def _set(self, work_id: str, assignment: str) -> None:
        with self.owner_db.transaction() as session:
            session.execute(
                sa.text(f"UPDATE occ.controller_work SET {assignment} WHERE id = :id"),
                {"id": work_id},
            )
