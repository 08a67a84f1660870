"""``Idempotency-Key`` use cases: find a key's record, reserve it inside the change's own
transaction, store the answer once the change committed.

The web layer names the request's key while its view runs (``hold``). The first write
transaction a use case opens meanwhile (``admission.guarded``) reserves the key before
anything else: the record commits with the change or not at all, and a concurrent request
with the same key waits for that transaction, then changes nothing (``IdempotencyKeyInUse``).
A request that changes nothing (refused, failed, or only reading) keeps nothing.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Final

from occ.foundation import errors
from occ.state import idempotency
from occ.state.db import Database, Session

Record = idempotency.Record
Scope = idempotency.Scope


@dataclass(kw_only=True)
class Reservation:
    """A request's key and body fingerprint; ``applied`` once its change committed."""

    scope: Scope
    fingerprint: str
    applied: bool = False


_HELD: Final[contextvars.ContextVar[Reservation | None]] = contextvars.ContextVar(
    "occ_idempotency_reservation", default=None
)


def find(db: Database, scope: Scope) -> Record | None:
    """The key's record (a committed change, answered or not), unless it expired."""
    with db.autocommit() as session:
        return idempotency.find(session, scope)


def hold(reservation: Reservation | None) -> None:
    """Name the key the next write transaction of this request reserves (``None``: none)."""
    _HELD.set(reservation)


def reserve(session: Session) -> Reservation | None:
    """Reserve the held key in this write transaction, if one is held and not yet applied.

    The caller marks the answer ``applied`` once the transaction committed.

    Raises:
        IdempotencyKeyInUse: another request with the key committed its change meanwhile.
    """
    reservation = _HELD.get()
    if reservation is None or reservation.applied:
        return None
    if not idempotency.reserve(session, reservation.scope, reservation.fingerprint):
        raise errors.IdempotencyKeyInUse(
            "a request with this Idempotency-Key was applied meanwhile; repeat it to get its answer"
        )
    return reservation


def record_answer(
    db: Database, reservation: Reservation, *, status: int, body: Any, location: str | None
) -> None:
    """Store the successful answer of an applied request, for its repeats to replay."""
    with db.transaction() as session:
        idempotency.complete(
            session, reservation.scope, status=status, body=body, location=location
        )
