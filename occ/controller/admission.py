"""Shared machinery of the admission use cases: guarded transactions, authorization, names.

A use case opens its transaction with ``guarded``; ``require`` raises ``Denied`` inside it, and
``guarded`` audits the denial in its own short transaction after the rollback, then raises
``NotFound`` (the caller may not even read the resource) or ``Forbidden``. A hidden denial
(``NotFound``) is audited in aggregate: one event per principal, resource kind and minute with
a count (``audit.tally_hidden_denial``), so an outsider's guesses cannot grow the audit table
at request rate; a 403 is audited one event each, with its decision.
"""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, TypedDict, TypeVar, Unpack

from occ import iam
from occ.controller import changes, idempotency
from occ.foundation import errors, ids
from occ.state import audit, namespaces
from occ.state.db import Database, Session

NAME_MAX: Final = 200

T = TypeVar("T")


class Denied(Exception):
    """An authorization denial inside an admission transaction (turned into an error outside)."""

    def __init__(
        self,
        *,
        action: str,
        permission: str,
        resource: iam.Resource,
        decision: iam.Decision,
        hidden: bool,
        request: Mapping[str, Any] | None,
        detail: str | None = None,
    ):
        super().__init__(action)
        self.action = action
        self.permission = permission
        self.resource = resource
        self.decision = decision
        self.hidden = hidden
        self.request = request
        self.detail = detail


class Refused(Exception):
    """A change refused by a safety rule inside an admission transaction (``error`` outside).

    Audited like a denial, once the transaction rolled back: the refused change leaves nothing.
    """

    def __init__(
        self,
        error: errors.OccError,
        *,
        action: str,
        resource: iam.Resource,
        details: Mapping[str, Any],
    ):
        super().__init__(action)
        self.error = error
        self.action = action
        self.resource = resource
        self.details = details


@contextlib.contextmanager
def guarded(db: Database, actor_id: str, *, read_only: bool = False) -> Iterator[Session]:
    """A use case's transaction; a denial or refusal inside it is audited once it rolled back.

    A write transaction first reserves the request's ``Idempotency-Key``, if it holds one
    (``occ.controller.idempotency``), so the key's record commits with the change.
    """
    try:
        reservation = None
        with db.snapshot() if read_only else db.transaction() as session:
            if not read_only:
                reservation = idempotency.reserve(session)
            yield session
        if reservation is not None:
            reservation.applied = True
    except Refused as refused:
        _audit_denial(
            db,
            actor_id,
            refused.action,
            refused.resource,
            {"code": refused.error.code, **refused.details},
        )
        raise refused.error from None
    except Denied as denied:
        details: dict[str, Any] = {
            "permission": denied.permission,
            "reason": str(denied.decision.reason),
            "authorization": denied.decision.evidence.as_details(),
        }
        if denied.request is not None:
            details["request"] = present(denied.request)
        if denied.hidden:
            # counted, not recorded one by one: an outsider cannot grow the audit at its rate
            with db.transaction() as session:
                audit.tally_hidden_denial(
                    session, **_denial(actor_id, denied.action, denied.resource, details)
                )
            raise errors.NotFound(f"the {denied.resource.kind} does not exist") from None
        _audit_denial(db, actor_id, denied.action, denied.resource, details)
        raise errors.Forbidden(denied.detail, decision=denied.decision) from None


def _audit_denial(
    db: Database, actor_id: str, action: str, resource: iam.Resource, details: Mapping[str, Any]
) -> None:
    """The authorization-denial event, in its own transaction (the use case's rolled back)."""
    with db.transaction() as session:
        audit.append(
            session,
            kind=audit.EventKind.AUTHORIZATION_DENIAL,
            outcome=audit.EventOutcome.DENIED,
            **_denial(actor_id, action, resource, details),
        )


def _denial(
    actor_id: str, action: str, resource: iam.Resource, details: Mapping[str, Any]
) -> audit.Change:
    """What a denial's audit records, counted or not: the action, the caller and the resource."""
    return audit.Change(
        action=action,
        actor_id=actor_id,
        namespace_id=resource.namespace_id,
        resource_kind=resource.kind,
        resource_id=resource.id,
        details=details,
    )


def require(
    session: Session,
    actor_id: str,
    action: str,
    permission: str,
    resource: iam.Resource,
    *,
    hide_unless_readable: bool = False,
    request: Mapping[str, Any] | None = None,
    detail: str | None = None,
    policies: iam.PolicyCache | None = None,
) -> iam.Decision:
    """The allowing decision, or ``Denied``; hidden (404) when the caller may not even read.

    ``detail`` is what a 403 says (the error's generic text when ``None``); ``policies`` lets a
    use case that changes no policy load each principal's policy once (``iam.PolicyCache``).
    """
    decision = iam.authorize(session, actor_id, permission, resource, policies=policies)
    if decision.allowed:
        return decision
    hidden = hide_unless_readable and (
        permission == f"{resource.kind}:read"
        or not iam.authorize(
            session, actor_id, f"{resource.kind}:read", resource, policies=policies
        ).allowed
    )
    raise Denied(
        action=action,
        permission=permission,
        resource=resource,
        decision=decision,
        hidden=hidden,
        request=request,
        detail=detail,
    )


class ChangeChecks(TypedDict, total=False):
    """What ``permitted_change`` passes on to ``require``."""

    hide_unless_readable: bool
    request: Mapping[str, Any] | None


def permitted_change(
    session: Session,
    actor_id: str,
    action: str,
    permission: str,
    resource: iam.Resource,
    **checks: Unpack[ChangeChecks],
) -> changes.Change:
    """The change ``permission`` on ``resource`` allows ``action`` to make, or ``Denied`` (see
    ``require``)."""
    decision = require(session, actor_id, action, permission, resource, **checks)
    return changes.Change(session=session, actor_id=actor_id, action=action, decision=decision)


def permitted_verb(
    session: Session,
    actor_id: str,
    kind: str,
    verb: str,
    resource: iam.Resource,
    *,
    permission: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> changes.Change:
    """The change ``permission`` (``<kind>:<verb>`` unless given) on ``resource`` allows the
    action ``<kind>s.<verb>`` to make; hidden (404) when the caller may not even read."""
    return permitted_change(
        session,
        actor_id,
        f"{kind}s.{verb}",
        permission or f"{kind}:{verb}",
        resource,
        hide_unless_readable=True,
        request=request,
    )


def present(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


_INVISIBLE: Final = frozenset({"Cf", "Cs", "Zl", "Zp"})
"""Unicode categories a name may not hold: format characters (zero-width, bidirectional
controls), surrogates, line and paragraph separators."""


def name(value: str, path: errors.Path) -> str:
    """A resource name: 1..200 characters, no surrounding whitespace, no control characters,
    nor invisible ones that make two names look alike (format characters such as zero-width
    spaces and bidirectional overrides, line and paragraph separators)."""
    if not 1 <= len(value) <= NAME_MAX:
        raise errors.InvalidInput.at(path, f"must be 1 to {NAME_MAX} characters long")
    if value != value.strip():
        raise errors.InvalidInput.at(path, "must not start or end with whitespace")
    categories = {unicodedata.category(character) for character in value}
    if "Cc" in categories:
        raise errors.InvalidInput.at(path, "must not contain control characters")
    if categories & _INVISIBLE:
        raise errors.InvalidInput.at(path, "must not contain invisible or direction characters")
    return value


def require_id(kind: str, value: str) -> None:
    """A malformed path id answers ``NotFound`` before any query."""
    if not ids.is_valid(kind, value):
        raise errors.NotFound(f"the {kind.replace('_', ' ')} does not exist")


def found(value: T | None, kind: str) -> T:
    """``value``, or ``NotFound`` when a look-up found no ``kind`` (a row's absence)."""
    if value is None:
        raise errors.NotFound(f"the {kind.replace('_', ' ')} does not exist")
    return value


def require_ready(status: str) -> None:
    """New content needs a ``ready`` Namespace."""
    if status != namespaces.NamespaceStatus.READY:
        raise errors.NamespaceNotReady(f"the Namespace is {status}, not ready")


def readable(
    session: Session,
    actor_id: str,
    permission: str,
    items: Sequence[T],
    resource_of: Callable[[T], iam.Resource],
) -> list[T]:
    """The items the caller holds ``permission`` on (one policy load for the whole list)."""
    decisions = iam.authorize_each(
        session, actor_id, permission, [resource_of(item) for item in items]
    )
    return [item for item, decision in zip(items, decisions, strict=True) if decision.allowed]
