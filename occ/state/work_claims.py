"""Claiming work: up to a limit of ready items, at most one per lane, each with a dispatch token,
within the fleet's in-flight budget and the intent class's reserved share of it.

Runs the named statements of ``sql/work_claims.sql`` on the caller's session; never commits.
What a claim then goes through (start, renew, complete, ...) is ``work_queue``'s.
``docs/queue.md`` states the contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.state import queries, values, work_rows
from occ.state.work_keys import Priority

SQL: Final = queries.load("work_claims.sql")

LANE_LOCK_CLASS: Final = 204
"""First key of the transaction-scoped advisory locks that keep two claimers off one lane."""

_CLAIM_RACE_RETRIES: Final = 3

INTENT_RESERVE: Final = 4
"""One in this many seats of the in-flight budget (at least one) is kept for the intent class:
repairs and periodic upkeep together hold at most the rest, so a deploy behind a flood of
upkeep is claimed at the next claim instead of when the flood drains."""

_CLASSES: Final = sorted(Priority, reverse=True)

ROWS_PER_SEAT: Final = 20
"""Ready rows a claim reads from each class per seat it may fill (past busy lanes): room for
lanes that queue several items of one class."""
MIN_WINDOW: Final = 1000
"""The fewest rows a claim reads from each intent class."""
MIN_UPKEEP_WINDOW: Final = 100
"""The fewest rows a claim with a share of upkeep seats reads from each class below intent:
those seats are few (a quarter of the budget at a time), so a window sized to them keeps a
claim behind a flood of upkeep about as cheap as an idle queue's (``bench/intent.py``)."""


@dataclass(frozen=True)
class Batch:
    """What one budgeted claim took, and whether a backlog likely remains."""

    claims: list[values.Claim]
    more: bool
    """The claim filled its limit: a backlog likely remains, claim again soon (the control
    worker re-claims instead of waiting for a nudge)."""


def claim_within_budget(
    session: orm.Session, policy: values.QueuePolicy, *, max_in_flight: int
) -> list[values.Claim]:
    """Claim at most ``max_in_flight`` minus the live claims, one claimer at a time.

    Claim batches of every control worker wait for each other (a transaction-scoped advisory
    lock), so the fleet never holds more than ``max_in_flight`` claims and nothing outlives
    its dispatch lease waiting in the broker.
    """
    return claim_share(session, policy, max_in_flight=max_in_flight, min_room=1).claims


def claim_share(
    session: orm.Session, policy: values.QueuePolicy, *, max_in_flight: int, min_room: int
) -> Batch:
    """``claim_within_budget``, but only when at least ``min_room`` of the budget is free.

    With less room (and some claims live) nothing is claimed: one small claim per completion
    costs a claim statement for an item or two; a later nudge (a completion's) claims once the
    share is free. ``more`` says whether to claim again soon. Classes below intent together
    hold at most ``upkeep_budget(max_in_flight)`` claims, so a flood of upkeep always leaves
    room (a quarter, ``min_room`` at the default share) for the next intent item. Upkeep is
    claimed a share at a time too: with less than ``min_room`` of its own room free, the claim
    takes intent only and reads no lower class, so under a flood of upkeep most claims cost
    what an idle queue's does and a deploy waits behind at most one upkeep claim.
    """
    session.execute(SQL["serialize_claimers"])
    live, upkeep = _live_by_class(session)
    room = max_in_flight - live
    if room <= 0 or (room < min_room and live > 0):
        return Batch([], False)
    upkeep_room = max(upkeep_budget(max_in_flight) - upkeep, 0)
    if upkeep_room < min_room and upkeep > 0:
        upkeep_room = 0  # a seat or two: wait for a share
    claims = claim(session, policy, limit=room, upkeep_limit=upkeep_room)
    return Batch(claims, len(claims) == room)


def upkeep_budget(max_in_flight: int) -> int:
    """How many claims the classes below intent may hold together (``INTENT_RESERVE``)."""
    return max(max_in_flight - max(max_in_flight // INTENT_RESERVE, 1), 1)


def claim(
    session: orm.Session,
    policy: values.QueuePolicy,
    *,
    limit: int,
    upkeep_limit: int | None = None,
    window: int | None = None,
) -> list[values.Claim]:
    """Claim up to ``limit`` ready items, at most one per lane, each with a dispatch token,
    and at most ``upkeep_limit`` (unset: ``limit``) of them below the intent class (0: the
    classes below intent are not read at all).

    One statement: scans a bounded window of each class's range of the ready index past the
    lanes that have a live claim (``window``, unset: ``ROWS_PER_SEAT`` a seat; smaller for the
    classes below intent when ``upkeep_limit`` is set), keeps the head of each lane (its
    highest class first), gives the classes weighted turns (``Priority``: the n-th head of a
    class of weight w at turn n / w), and locks the first ``2 * limit`` heads by turn with
    ``SKIP LOCKED`` plus a non-blocking advisory lock on the lane, so racing claimers skip
    each other instead of waiting or colliding, and no claim takes more than ``2 * limit``
    lane locks.
    """
    if limit <= 0:
        return []
    params = claim_parameters(policy, limit=limit, upkeep_limit=upkeep_limit, window=window)
    for attempt in range(_CLAIM_RACE_RETRIES):
        try:
            # a savepoint: a lane collision (the unique index backstop) costs one retry, not
            # the caller's transaction
            with session.begin_nested():
                rows = session.connection().execute(SQL["claim"], params).mappings().all()
            break
        except sa_exc.IntegrityError:
            if attempt == _CLAIM_RACE_RETRIES - 1:
                raise
    ordered = sorted(
        rows, key=lambda r: (-r["priority"], r["available_at"], r["created_at"], r["id"])
    )
    return [work_rows.claim_of(row) for row in ordered]


def claim_parameters(
    policy: values.QueuePolicy, *, limit: int, upkeep_limit: int | None, window: int | None
) -> dict[str, object]:
    """The claim statement's parameters (see ``claim``)."""
    window = window or max(limit * ROWS_PER_SEAT, MIN_WINDOW)
    upkeep_window = (
        window
        if upkeep_limit is None
        else min(window, max(upkeep_limit * ROWS_PER_SEAT, MIN_UPKEEP_WINDOW))
    )
    return {
        "limit": limit,
        "upkeep_limit": limit if upkeep_limit is None else upkeep_limit,
        "intent": int(Priority.INTENT),
        "priorities": [int(p) for p in _CLASSES if upkeep_limit != 0 or p >= Priority.INTENT],
        "heads": 2 * limit,
        "window": window,
        "upkeep_window": upkeep_window,
        "max_attempts": policy.max_attempts,
        "dispatch_lease_ms": policy.dispatch_lease_ms,
    }


def live_claims(session: orm.Session) -> int:
    """How many items are claimed right now (dispatched or running)."""
    return _live_by_class(session)[0]


def _live_by_class(session: orm.Session) -> tuple[int, int]:
    """The live claims, and how many of them are below the intent class."""
    row = session.execute(SQL["live_claims"], {"intent": int(Priority.INTENT)}).one()
    return int(row.live), int(row.upkeep)
