"""Operator read use cases: the work queue (``installation:administer``) and the audit ledger
(``installation:read``), both checked on the Installation.

Read-only snapshots; pages are keyset pages (newest first) with an opaque cursor for work
items and a sequence number for audit events, filtered by a ``WorkFilter`` or an
``AuditFilter`` (the web layer's query schemas check each filter's form; a cursor and a work
id are checked here, before any query). Items are ``occ.state.values.WorkItem`` values, which
never carry a claim token.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from occ.controller import admission, installation
from occ.foundation import errors, ids
from occ.state import audit, values, work_queue, work_reads
from occ.state.db import Database, Session
from occ.state.work_keys import WorkKey

MAX_LIMIT: Final = 500
DEFAULT_LIMIT: Final = 100
WORK_ID_MAX: Final = 200
SEQUENCE_MAX: Final = 2**63 - 1

WORK_ID_PATTERN: Final = r"^[a-z][a-z_]*:[A-Za-z0-9_:.-]{1,190}$"
"""A loose outline of every work id (``namespace:<ns>:reconcile:ready``, ...) for the query
schema; ``valid_work_id`` checks the exact shapes."""

RESOURCE_ID_PATTERN: Final = (
    f"^(?:{'|'.join(sorted(set(ids.PREFIXES.values())))})_{ids.UUID4_PATTERN}$"
)
"""Any prefixed occ id."""

_CURSOR_MAX: Final = 512

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class WorkFilter:
    """Which work items a page lists: those matching every given filter, at most ``limit``,
    older than the item ``cursor`` names."""

    state: values.WorkState | None = None
    namespace_id: str | None = None
    agent_id: str | None = None
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None


@dataclass(frozen=True, kw_only=True)
class AuditFilter:
    """Which audit events a page lists: those matching every given filter, at most ``limit``,
    with a sequence number below ``before``."""

    namespace_id: str | None = None
    resource_id: str | None = None
    work_id: str | None = None
    kind: audit.EventKind | None = None
    before: int | None = None
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True, kw_only=True)
class WorkPage:
    """One page of work items, newest first; ``next_cursor`` fetches the next (older) page."""

    items: list[values.WorkItem]
    next_cursor: str | None


@dataclass(frozen=True, kw_only=True)
class AuditPage:
    """One page of audit events, newest first; ``next_before`` fetches the next (older) page."""

    items: list[audit.AuditEvent]
    next_before: int | None


def list_work(db: Database, actor_id: str, query: WorkFilter) -> WorkPage:
    """Work items matching every given filter, newest first (``installation:administer``).

    Raises:
        InvalidInput: a bad ``cursor`` (before any query).
        Forbidden: the caller may not administer the Installation (audited).
    """
    position = None if query.cursor is None else decode_cursor(query.cursor)
    items, last = _newest_first(
        db,
        actor_id,
        "work.list",
        "installation:administer",
        read=lambda session, rows: work_reads.page(
            session,
            state=query.state,
            namespace_id=query.namespace_id,
            agent_id=query.agent_id,
            after=position,
            limit=rows,
        ),
        limit=query.limit,
    )
    return WorkPage(
        items=items,
        next_cursor=None if last is None else encode_cursor(last.created_at, last.id),
    )


def get_work(db: Database, actor_id: str, *, work_id: str) -> values.WorkItem:
    """One work item (``installation:administer``).

    Authorization comes before the lookup, so a denial says nothing about existence.

    Raises:
        NotFound: no such item (or a malformed id), or the caller may not even read the
            Installation (audited).
        Forbidden: the caller may read but not administer the Installation (audited).
    """
    if not valid_work_id(work_id):
        raise errors.NotFound("the work item does not exist")
    with admission.guarded(db, actor_id, read_only=True) as session:
        _require_installation(session, actor_id, "work.read", "installation:administer", hide=True)
        return admission.found(work_queue.get(session, work_id), "work_item")


def list_audit_events(db: Database, actor_id: str, query: AuditFilter) -> AuditPage:
    """Audit events matching every given filter, newest first (``installation:read``).

    ``before`` pages backwards: only events with a smaller sequence number.

    Raises:
        InvalidInput: a ``work_id`` of no work id's shape (before any query).
        Forbidden: the caller may not read the Installation (audited).
    """
    if query.work_id is not None and not valid_work_id(query.work_id):
        raise errors.InvalidInput.at(("work_id",), "must be a work id")
    items, last = _newest_first(
        db,
        actor_id,
        "audit_events.list",
        "installation:read",
        read=lambda session, rows: audit.list_events(
            session,
            namespace_id=query.namespace_id,
            resource_id=query.resource_id,
            work_id=query.work_id,
            kind=query.kind,
            before_sequence=query.before,
            limit=rows,
        ),
        limit=query.limit,
    )
    return AuditPage(items=items, next_before=None if last is None else last.sequence)


def valid_work_id(value: object) -> bool:
    """Whether ``value`` is a well-formed work id (``WorkKey.parse`` accepts it)."""
    if not isinstance(value, str) or len(value) > WORK_ID_MAX:
        return False
    try:
        WorkKey.parse(value)
    except ValueError:
        return False
    return True


def _require_installation(
    session: Session, actor_id: str, action: str, permission: str, *, hide: bool = False
) -> None:
    resource = installation.resource(session)
    admission.require(session, actor_id, action, permission, resource, hide_unless_readable=hide)


def _newest_first(
    db: Database,
    actor_id: str,
    action: str,
    permission: str,
    *,
    read: Callable[[Session, int], list[T]],
    limit: int,
) -> tuple[list[T], T | None]:
    """The first ``limit`` rows ``read`` returns (asked for one more) in a read-only
    transaction, once ``permission`` on the Installation allowed ``action``; and the last of
    them when more rows follow (where the next page starts)."""
    with admission.guarded(db, actor_id, read_only=True) as session:
        _require_installation(session, actor_id, action, permission)
        rows = read(session, limit + 1)
    items = rows[:limit]
    return items, items[-1] if len(rows) > limit and items else None


def encode_cursor(created_at: dt.datetime, work_id: str) -> str:
    """The opaque cursor of the page that continues below ``(created_at, work_id)``."""
    raw = json.dumps([created_at.isoformat(), work_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, str]:
    """The position an ``encode_cursor`` cursor names, or ``InvalidInput`` at ``cursor``."""
    invalid = errors.InvalidInput.at(("cursor",), "is not a cursor this API returned")
    if not 1 <= len(cursor) <= _CURSOR_MAX:
        raise invalid
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, work_id = json.loads(raw.decode("utf-8"))
        created_at = dt.datetime.fromisoformat(created)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise invalid from None
    if created_at.tzinfo is None or not valid_work_id(work_id):
        raise invalid
    return created_at, work_id
