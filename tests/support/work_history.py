"""Finished work as history: an Agent whose revisions' terminal work rows a test writes
directly (as the owner), finished a given number of days ago."""

from __future__ import annotations

import sqlalchemy as sa

from occ.state import values
from occ.state.db import Database
from tests.support import rows

SUCCEEDED = values.WorkState.SUCCEEDED

_FINISHED = sa.text("""
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, state, available_at,
       created_at, updated_at, completed_at, reason_code)
    VALUES (:id, :kind, :namespace_id, :agent_id, :revision_id, :actor_id, :state,
            clock_timestamp(), clock_timestamp(), clock_timestamp(),
            clock_timestamp() - :days_ago * interval '1 day', :code)
""")


class Agent:
    """An Agent of the Namespace whose revisions' work rows the test writes as the owner."""

    def __init__(self, owner_db: Database, namespace_id: str, actor: str, name: str) -> None:
        self.owner_db, self.namespace_id, self.actor = owner_db, namespace_id, actor
        with owner_db.transaction() as session:
            self.id = rows.agent(session, namespace_id=namespace_id, name=name)
        self.revisions: list[str] = []

    def revision(self) -> str:
        with self.owner_db.transaction() as session:
            revision_id = rows.revision(
                session,
                namespace_id=self.namespace_id,
                agent_id=self.id,
                actor_id=self.actor,
                number=len(self.revisions) + 1,
            )
        self.revisions.append(revision_id)
        return revision_id

    def finished(
        self,
        work_id: str,
        kind: str,
        revision_id: str,
        state: values.WorkState,
        days_ago: float,
        code: str | None = None,
    ) -> str:
        if code is None:
            code = "REVISION_ACTIVATED" if state == SUCCEEDED else "RUNTIME_STARTUP_FAILED"
        with self.owner_db.transaction() as session:
            session.execute(
                _FINISHED,
                {
                    "id": work_id,
                    "kind": kind,
                    "namespace_id": self.namespace_id,
                    "agent_id": self.id,
                    "revision_id": revision_id,
                    "actor_id": self.actor,
                    "state": state.value,
                    "days_ago": days_ago,
                    "code": code,
                },
            )
        return work_id

    def deployed(self, state: values.WorkState, days_ago: float, code: str | None = None) -> str:
        """A new revision whose deployment finished ``days_ago`` (with ``code``, else the
        outcome's usual one); its work id."""
        revision_id = self.revision()
        work_id = f"agent_revision:{revision_id}:reconcile"
        return self.finished(work_id, "revision_reconcile", revision_id, state, days_ago, code)

    def repaired(self, revision_id: str, second: int, days_ago: float) -> str:
        work_id = f"agent_revision:{revision_id}:maintenance:{second}"
        return self.finished(work_id, "revision_maintenance", revision_id, SUCCEEDED, days_ago)

    def activate(self, revision_id: str) -> None:
        with self.owner_db.transaction() as session:
            session.execute(
                sa.text("UPDATE occ.agents SET active_revision_id = :rev WHERE id = :id"),
                {"rev": revision_id, "id": self.id},
            )
