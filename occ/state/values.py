"""Frozen values the state package hands out: work items, claims, queue policy and reports."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from dataclasses import dataclass
from typing import Any

from occ.state.work_keys import WorkKey, WorkKind


class WorkState(enum.StrEnum):
    QUEUED = "queued"
    CLAIMED = "claimed"
    SUCCEEDED = "succeeded"
    FAILED_PERMANENT = "failed_permanent"


@dataclass(frozen=True, kw_only=True)
class QueuePolicy:
    """The numbers the queue runs with (from ``Settings``)."""

    lease_ms: int = 15_000
    dispatch_lease_ms: int = 30_000
    max_attempts: int = 5
    convergence_timeout_ms: int = 900_000


@dataclass(frozen=True, kw_only=True)
class WorkOwner:
    """Who and what a work item is for; frozen at enqueue."""

    namespace_id: str
    actor_id: str
    agent_id: str | None = None
    revision_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkItem:
    """A row of ``controller_work`` as read at one moment."""

    id: str
    key: WorkKey
    owner: WorkOwner
    state: WorkState
    attempt_count: int
    available_at: dt.datetime
    claimed: bool
    started: bool
    lease_expires_at: dt.datetime | None
    completed_at: dt.datetime | None
    reason_code: str | None
    result_data: dict[str, Any] | None
    last_progress_code: str | None
    last_progress_at: dt.datetime | None
    created_at: dt.datetime
    updated_at: dt.datetime

    @property
    def kind(self) -> WorkKind:
        return self.key.kind


@dataclass(frozen=True, kw_only=True)
class Claim:
    """A live claim on one item: the token every fenced write must present.

    ``claim()`` hands out dispatch claims; ``start()`` exchanges one for a run claim.
    """

    work_id: str
    key: WorkKey
    token: uuid.UUID
    owner: WorkOwner
    attempt_count: int
    claimed_at: dt.datetime
    lease_expires_at: dt.datetime
    created_at: dt.datetime
    running: bool

    @property
    def kind(self) -> WorkKind:
        return self.key.kind


@dataclass(frozen=True, kw_only=True)
class Renewal:
    """A renewed claim and the lease the database granted it."""

    claim: Claim
    lease_left_ms: float
    """What was left of the granted lease when the statement answered (database clock)."""
    database_now: dt.datetime
    """The database clock when the statement answered."""


@dataclass(frozen=True)
class RecoveryReport:
    """What one ``recover_stale`` pass changed.

    ``failed_items`` are the items it failed for good (expired at the limit, or exhausted):
    the caller applies each kind's terminal-failure effect in the same transaction.
    """

    requeued: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    exhausted: tuple[str, ...] = ()
    failed_items: tuple[WorkItem, ...] = ()
    next_available_in_ms: int | None = None
    """How soon the earliest requeued item becomes claimable (None when nothing was requeued)."""

    @property
    def recovered(self) -> int:
        return len(self.requeued) + len(self.failed)
