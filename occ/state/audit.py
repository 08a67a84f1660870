"""Audit events: append one in the caller's transaction, list recent ones.

Append-only (a trigger rejects UPDATE and DELETE); never commits. Details are data for
operators, not logs: never put secrets, secret values, API keys or tokens in them.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NotRequired, TypedDict, Unpack, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models, rows, values


class EventKind(enum.StrEnum):
    """What an audit event records."""

    BOOTSTRAP = "bootstrap"
    MUTATION = "mutation"
    ACCESS = "access"
    AUTHORIZATION_DENIAL = "authorization_denial"


class EventOutcome(enum.StrEnum):
    """How the recorded action ended."""

    SUCCESS = "success"
    DENIED = "denied"
    FAILURE = "failure"


KINDS: Final = frozenset(EventKind)
OUTCOMES: Final = frozenset(EventOutcome)
MAX_LIMIT: Final = 1000
_EVENTS: Final = cast(sa.Table, models.AuditEvent.__table__)

_ACTION: Final = re.compile(r"[a-z][a-z0-9_.:-]{0,127}")

_APPEND: Final = sa.text(
    "SELECT occ.append_audit_event(:kind, :action, :actor_id, :namespace_id, :resource_kind, "
    ":resource_id, :work_id, :outcome, CAST(:details AS jsonb))"
)
"""The one writer of audit rows (a SQL function the queue and the definer functions call too)."""


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    """One audit event as stored."""

    id: str
    sequence: int
    occurred_at: dt.datetime
    kind: EventKind
    action: str
    actor_id: str
    outcome: EventOutcome
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None
    work_id: str | None
    details: Mapping[str, Any]


_VALUES: Final = rows.Values(
    _EVENTS,
    AuditEvent,
    convert={"kind": EventKind, "outcome": EventOutcome, "details": dict},
)


def event_of(row: sa.RowMapping) -> AuditEvent:
    """The event of an ``audit_events`` row."""
    return _VALUES.make(row)


class Change(TypedDict):
    """What an event records besides its kind and outcome (``mutation``'s keywords)."""

    action: str
    actor_id: str
    namespace_id: NotRequired[str | None]
    resource_kind: NotRequired[str | None]
    resource_id: NotRequired[str | None]
    work_id: NotRequired[str | None]
    details: NotRequired[Mapping[str, Any] | None]


class Event(Change):
    """The fields of one event to append (``append``'s and ``parameters``' keywords)."""

    kind: str
    outcome: str


def append(session: orm.Session, **event: Unpack[Event]) -> str:
    """Record one event in the caller's transaction and return its ``aud_`` id.

    ``kind`` is bootstrap, mutation, access or authorization_denial; ``outcome`` is success,
    denied or failure; ``action`` a dotted name such as ``namespaces.create``. ``details`` is a
    JSON object of plain facts (ids, names, reason codes, decisions) and must never carry a
    secret: no secret values, API keys, tokens, passwords or credentials of any kind.

    Raises:
        ValueError: an unknown kind or outcome, or a malformed action.
    """
    event_id: str = session.execute(_APPEND, parameters(**event)).scalar_one()
    return event_id


_TALLY_HIDDEN: Final = sa.text(
    "SELECT occ.tally_hidden_denial(:actor_id, :action, :namespace_id, :resource_kind, "
    ":resource_id, CAST(:details AS jsonb))"
)


def tally_hidden_denial(session: orm.Session, **event: Unpack[Change]) -> int:
    """Count one denial on a resource the caller may not see, in the caller's transaction.

    Such denials are audited in aggregate: one ``authorization_denial`` event per principal,
    resource kind and minute. The minute's first denial is appended as its own event (its
    action, resource and details) with ``details.hiddenDenials`` 1; each later one only adds
    one to that count. Returns the count so far in this minute.

    Raises:
        ValueError: a malformed action.
    """
    checked = parameters(kind=EventKind.AUTHORIZATION_DENIAL, outcome=EventOutcome.DENIED, **event)
    counted: int = session.execute(
        _TALLY_HIDDEN, {name: checked[name] for name in _TALLY_PARAMETERS}
    ).scalar_one()
    return counted


_TALLY_PARAMETERS: Final = (
    "actor_id",
    "action",
    "namespace_id",
    "resource_kind",
    "resource_id",
    "details",
)


def parameters(**event: Unpack[Event]) -> dict[str, Any]:
    """The checked bound parameters of one event (see ``append``) for a statement that calls
    ``occ.append_audit_event(:kind, :action, :actor_id, :namespace_id, :resource_kind,
    :resource_id, :work_id, :outcome, CAST(:details AS jsonb))`` itself.

    Raises:
        ValueError: an unknown kind or outcome, or a malformed action.
    """
    kind, outcome, action = event["kind"], event["outcome"], event["action"]
    if kind not in KINDS:
        raise ValueError(f"unknown audit kind {kind!r}")
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown audit outcome {outcome!r}")
    if not _ACTION.fullmatch(action):
        raise ValueError(f"malformed audit action {action!r}")
    return {
        "kind": kind,
        "action": action,
        "actor_id": event["actor_id"],
        "namespace_id": event.get("namespace_id"),
        "resource_kind": event.get("resource_kind"),
        "resource_id": event.get("resource_id"),
        "work_id": event.get("work_id"),
        "outcome": outcome,
        "details": json.dumps(dict(event.get("details") or {}), separators=(",", ":")),
    }


def mutation(session: orm.Session, **change: Unpack[Change]) -> str:
    """Record a successful change (kind ``mutation``, outcome ``success``); see ``append``."""
    return append(session, kind=EventKind.MUTATION, outcome=EventOutcome.SUCCESS, **change)


def work_event(
    session: orm.Session,
    work: values.Claim | values.WorkItem,
    *,
    action: str,
    resource_kind: str,
    resource_id: str,
    details: Mapping[str, Any],
    kind: str = EventKind.MUTATION,
    outcome: str = EventOutcome.SUCCESS,
) -> str:
    """Record an event of a work item's pass (see ``append``), given its claim or its row: on
    behalf of the item's actor, in its Namespace, under its id; a successful change unless
    ``kind`` and ``outcome`` say otherwise."""
    return append(
        session,
        kind=kind,
        action=action,
        actor_id=work.owner.actor_id,
        outcome=outcome,
        namespace_id=work.owner.namespace_id,
        resource_kind=resource_kind,
        resource_id=resource_id,
        work_id=work.work_id if isinstance(work, values.Claim) else work.id,
        details=details,
    )


def has_event(session: orm.Session, resource_id: str, action: str) -> bool:
    """Whether any event with ``action`` was recorded about ``resource_id`` (however many other
    events the resource has)."""
    event = _EVENTS.c
    query = sa.select(sa.exists().where(event.resource_id == resource_id, event.action == action))
    return bool(session.execute(query).scalar_one())


def list_events(
    session: orm.Session,
    *,
    namespace_id: str | None = None,
    resource_id: str | None = None,
    work_id: str | None = None,
    kind: str | None = None,
    before_sequence: int | None = None,
    limit: int = 100,
) -> list[AuditEvent]:
    """Events matching every given filter, newest first, at most ``limit`` (capped at 1000).

    ``before_sequence`` pages backwards: only events older than that sequence number.
    """
    if limit < 1:
        raise ValueError("limit must be positive")
    event = _EVENTS.c
    where = rows.given(
        _EVENTS, namespace_id=namespace_id, resource_id=resource_id, work_id=work_id, kind=kind
    )
    if before_sequence is not None:
        where.append(event.sequence < before_sequence)
    query = _VALUES.select(*where).order_by(event.sequence.desc()).limit(min(limit, MAX_LIMIT))
    return rows.every(session, query, _VALUES.make)
