"""Operator read use cases: the work queue (``installation:administer``) and the audit ledger
(``installation:read``), both checked on the Installation.

Read-only snapshots; pages are keyset pages, newest first: work items in a ``keyset`` window
(the web layer makes its position an opaque cursor, as for every list), audit events below a
sequence number; filtered by a ``WorkFilter`` or an ``AuditFilter`` (the web layer's query
schemas check each filter's form; a work id is checked here too, before any query). Items
are ``occ.state.values.WorkItem`` values, which never carry a claim token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from occ.controller import admission, installation, listing
from occ.foundation import errors, ids
from occ.state import audit, keyset, values, work_queue, work_reads
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

FIRST_PAGE: Final = keyset.Window(limit=DEFAULT_LIMIT)


@dataclass(frozen=True, kw_only=True)
class WorkFilter:
    """Which work items a page lists: those matching every given filter, in the ``window``
    (``keyset.NEWEST_FIRST``) the page asks for."""

    state: values.WorkState | None = None
    namespace_id: str | None = None
    agent_id: str | None = None
    window: keyset.Window = FIRST_PAGE


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
class AuditPage:
    """One page of audit events, newest first; ``next_before`` fetches the next (older) page."""

    items: list[audit.AuditEvent]
    next_before: int | None


def list_work(db: Database, actor_id: str, query: WorkFilter) -> keyset.Page[values.WorkItem]:
    """Work items matching every given filter, newest first (``installation:administer``).

    Raises:
        Forbidden: the caller may not administer the Installation (audited).
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        _require_installation(session, actor_id, "work.list", "installation:administer")
        return listing.page(
            lambda window: work_reads.page(
                session,
                window,
                state=query.state,
                namespace_id=query.namespace_id,
                agent_id=query.agent_id,
            ),
            query.window,
            keyset.NEWEST_FIRST,
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
    with admission.guarded(db, actor_id, read_only=True) as session:
        _require_installation(session, actor_id, "audit_events.list", "installation:read")
        rows = audit.list_events(
            session,
            namespace_id=query.namespace_id,
            resource_id=query.resource_id,
            work_id=query.work_id,
            kind=query.kind,
            before_sequence=query.before,
            limit=query.limit + 1,  # one more: whether a next page exists
        )
    items = rows[: query.limit]
    last = items[-1] if len(rows) > query.limit and items else None
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
