"""AgentRevision rows: the immutable snapshot a deploy pins (written by ``deploys.write``), read
by the API and the workers.

Takes the caller's session and never commits. Revisions are immutable: a trigger rejects
UPDATE and the application role may not DELETE them; their numbers come from the Agent's
``revision_counter`` (``deploys.write``). Which of them a deploy pass retired is recorded
beside them (``revision_retirements``), so the next deploy retires only the others.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state import agents, keyset, models, rows

_REVISIONS: Final = cast(sa.Table, models.AgentRevision.__table__)
_RETIREMENTS: Final = cast(sa.Table, models.RevisionRetirement.__table__)


@dataclass(frozen=True)
class RevisionHarness:
    """The harness a revision pinned, with the execution mode it runs in."""

    id: str
    version: str
    mode: str


@dataclass(frozen=True, kw_only=True)
class RevisionSnapshot:
    """What a deploy pins: everything a worker needs, frozen at admission."""

    namespace_id: str
    agent_id: str
    revision_number: int
    actor_id: str
    configuration_id: str
    configuration_generation: int
    configuration_document: Mapping[str, Any]
    harness_id: str
    harness_version: str
    harness_mode: str
    compute_driver: str
    harness_auth: Mapping[str, Any]
    service_principal_id: str


@dataclass(frozen=True, kw_only=True)
class Revision(RevisionSnapshot):
    """An AgentRevision row."""

    id: str
    created_at: dt.datetime

    @property
    def harness(self) -> RevisionHarness:
        return RevisionHarness(self.harness_id, self.harness_version, self.harness_mode)

    @property
    def pinned_harness_auth(self) -> agents.HarnessAuth:
        """``harness_auth`` as a value: the pinned Secret or managed account (a managed
        account's token reference and Backend binding stay in ``harness_auth``)."""
        if self.harness_auth["kind"] == agents.ACCOUNT_SOURCE:
            return agents.HarnessAuth(
                agents.ACCOUNT_SOURCE, account_id=str(self.harness_auth["accountId"])
            )
        return agents.HarnessAuth(
            agents.SECRET_SOURCE, secret_id=str(self.harness_auth["secretId"])
        )


_VALUES: Final = rows.Values(_REVISIONS, Revision)


def get_revision(session: orm.Session, agent_id: str, revision_id: str) -> Revision | None:
    """The Agent's revision, or ``None``."""
    return _VALUES.get(session, revision_id, _REVISIONS.c.agent_id == agent_id)


def list_revisions(
    session: orm.Session, agent_id: str, window: keyset.Window = keyset.EVERYTHING
) -> list[Revision]:
    """The Agent's revisions, newest first (those in ``window``)."""
    return _VALUES.window(
        session, window, _REVISIONS.c.agent_id == agent_id, order=keyset.NEWEST_REVISION_FIRST
    )


def retired(session: orm.Session, agent_id: str) -> frozenset[str]:
    """The ids of the Agent's revisions whose runtime was retired."""
    statement = sa.select(_RETIREMENTS.c.revision_id).where(_RETIREMENTS.c.agent_id == agent_id)
    return frozenset(session.execute(statement).scalars())


def record_retired(session: orm.Session, agent_id: str, revision_ids: Iterable[str]) -> None:
    """Record that the runtimes of these revisions of the Agent were retired (again: a no-op)."""
    ids = sorted(set(revision_ids))
    if ids:
        session.execute(
            pg.insert(_RETIREMENTS)
            .values([{"agent_id": agent_id, "revision_id": i} for i in ids])
            .on_conflict_do_nothing()
        )


def record(row: sa.RowMapping) -> Revision:
    """A revision of its row's columns."""
    return _VALUES.make(row)
