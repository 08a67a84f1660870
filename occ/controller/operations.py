"""Operator read use cases: the work queue (``installation:administer``) and the audit ledger
(``installation:read``), both checked on the Installation.

Read-only snapshots; filters are validated before any query; pages are keyset pages (newest
first) with an opaque cursor for work items and a sequence number for audit events. Items
are ``occ.state.values.WorkItem`` values, which never carry a claim token.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from occ.controller import admission, installation, policy
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

_RESOURCE_ID: Final = re.compile(RESOURCE_ID_PATTERN)
_CURSOR_MAX: Final = 512

T = TypeVar("T")


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


def list_work(
    db: Database,
    *,
    actor_id: str,
    state: str | None = None,
    namespace_id: str | None = None,
    agent_id: str | None = None,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> WorkPage:
    """Work items matching every given filter, newest first (``installation:administer``).

    Raises:
        InvalidInput: a bad ``/state``, ``/namespaceId``, ``/agentId``, ``/limit`` or
            ``/cursor`` (before any query).
        Forbidden: the caller may not administer the Installation (audited).
    """
    if state is not None and state not in set(values.WorkState):
        raise errors.InvalidInput.at(
            "/state", "must be one of " + ", ".join(s.value for s in values.WorkState)
        )
    policy.optional_id("namespace", namespace_id, "/namespaceId")
    policy.optional_id("agent", agent_id, "/agentId")
    limit = _limit(limit)
    position = None if cursor is None else decode_cursor(cursor)
    items, last = _newest_first(
        db,
        actor_id,
        "work.list",
        "installation:administer",
        read=lambda session, rows: work_reads.page(
            session,
            state=None if state is None else values.WorkState(state),
            namespace_id=namespace_id,
            agent_id=agent_id,
            after=position,
            limit=rows,
        ),
        limit=limit,
    )
    return WorkPage(
        items=items,
        next_cursor=None if last is None else encode_cursor(last.created_at, last.id),
    )


def get_work(db: Database, *, actor_id: str, work_id: str) -> values.WorkItem:
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


def list_audit_events(
    db: Database,
    *,
    actor_id: str,
    namespace_id: str | None = None,
    resource_id: str | None = None,
    work_id: str | None = None,
    kind: str | None = None,
    before: int | None = None,
    limit: int = DEFAULT_LIMIT,
) -> AuditPage:
    """Audit events matching every given filter, newest first (``installation:read``).

    ``before`` pages backwards: only events with a smaller sequence number.

    Raises:
        InvalidInput: a bad ``/namespaceId``, ``/resourceId``, ``/workId``, ``/kind``,
            ``/before`` or ``/limit`` (before any query).
        Forbidden: the caller may not read the Installation (audited).
    """
    policy.optional_id("namespace", namespace_id, "/namespaceId")
    if resource_id is not None and not _RESOURCE_ID.fullmatch(resource_id):
        raise errors.InvalidInput.at("/resourceId", "must be an occ id (<prefix>_<uuid4>)")
    if work_id is not None and not valid_work_id(work_id):
        raise errors.InvalidInput.at("/workId", "must be a work id")
    if kind is not None and kind not in audit.KINDS:
        raise errors.InvalidInput.at("/kind", "must be one of " + ", ".join(sorted(audit.KINDS)))
    if before is not None and (isinstance(before, bool) or not 1 <= before <= SEQUENCE_MAX):
        raise errors.InvalidInput.at("/before", "must be a positive sequence number")
    limit = _limit(limit)
    items, last = _newest_first(
        db,
        actor_id,
        "audit_events.list",
        "installation:read",
        read=lambda session, rows: audit.list_events(
            session,
            namespace_id=namespace_id,
            resource_id=resource_id,
            work_id=work_id,
            kind=kind,
            before_sequence=before,
            limit=rows,
        ),
        limit=limit,
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


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise errors.InvalidInput.at("/limit", f"must be an integer from 1 to {MAX_LIMIT}")
    return limit


def encode_cursor(created_at: dt.datetime, work_id: str) -> str:
    """The opaque cursor of the page that continues below ``(created_at, work_id)``."""
    raw = json.dumps([created_at.isoformat(), work_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, str]:
    """The position an ``encode_cursor`` cursor names, or ``InvalidInput`` at ``/cursor``."""
    invalid = errors.InvalidInput.at("/cursor", "is not a cursor this API returned")
    if not isinstance(cursor, str) or not 1 <= len(cursor) <= _CURSOR_MAX:
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
