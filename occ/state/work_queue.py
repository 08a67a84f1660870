"""The durable work queue: enqueue, start, renew, release, defer_dispatch, defer, retry, complete,
fail, recover_stale (claiming is ``work_claims``'s).

Runs the named statements of ``sql/work_queue.sql`` on the caller's session, and the one-row
transitions of a claim on a session or an autocommit connection (``hot_statements.Target``);
never commits, never imports Celery, knows nothing about what an item is for. Every
transition of a claimed item is fenced by id + the live token (only a claimed row holds one) +
an unexpired lease, all measured on the database clock; zero rows changed raises
``ClaimLost``. Each transition writes its audit evidence in the same statement.
``docs/queue.md`` states the contract this module keeps.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from sqlalchemy import orm

from occ.foundation import codes, errors
from occ.state import hot_statements, queries, values, work_rows
from occ.state.work_keys import WorkKey, WorkKind

SQL: Final = queries.load("work_queue.sql")
HOT: Final = hot_statements.compile_all(
    SQL, "start", "renew", "release", "defer_dispatch", "complete", "fail", "retry", "defer"
)
"""The one-row transitions every item runs, executed below SQLAlchemy's execution layer."""


def enqueue(
    session: orm.Session, key: WorkKey, owner: values.WorkOwner, *, delay_ms: int = 0
) -> values.WorkItem:
    """Admit a work item in the caller's transaction; idempotent on the key.

    An existing item with the same owner and actor is returned unchanged, whatever its state;
    one with any difference raises ``IdempotencyConflict``.
    """
    params = {**item_parameters(key, owner), "delay_ms": max(delay_ms, 0)}
    row = session.execute(SQL["enqueue"], params).mappings().first()
    if row is None:
        row = session.execute(SQL["get"], {"work_id": str(key)}).mappings().one()
        if work_rows.owner_of(row) != owner:
            raise errors.IdempotencyConflict(
                "the work key already belongs to another owner, actor or target"
            )
    return work_rows.item_of(row)


def item_parameters(key: WorkKey, owner: values.WorkOwner) -> dict[str, str | None]:
    """The bound parameters of a new item's columns (``enqueue``'s, and those of a statement
    that inserts its item itself)."""
    spec = key.spec
    return {
        "work_id": str(key),
        "kind": key.kind.value,
        "namespace_id": owner.namespace_id,
        "agent_id": owner.agent_id,
        "revision_id": owner.revision_id,
        "actor_id": owner.actor_id,
        "namespace_target": spec.namespace_target,
        "agent_target": spec.agent_target,
    }


def get(session: orm.Session, key: WorkKey | str) -> values.WorkItem | None:
    """The item, or ``None``."""
    row = session.execute(SQL["get"], {"work_id": str(key)}).mappings().first()
    return None if row is None else work_rows.item_of(row)


def start(
    session: hot_statements.Target, policy: values.QueuePolicy, dispatch: values.Claim
) -> values.Claim | None:
    """Exchange a dispatch token, once, for a run token and the full lease.

    ``None`` when the token is spent (a redelivered message) or its dispatch lease lapsed.
    """
    return start_token(session, policy, dispatch.work_id, dispatch.token)


def start_token(
    session: hot_statements.Target,
    policy: values.QueuePolicy,
    work_id: str,
    dispatch_token: uuid.UUID,
) -> values.Claim | None:
    """``start`` for a work id and dispatch token as a task message carries them."""
    row = hot_statements.first(
        session, HOT["start"], start_parameters(policy, work_id, dispatch_token)
    )
    return None if row is None else work_rows.claim_of(row)


def start_parameters(
    policy: values.QueuePolicy, work_id: str, dispatch_token: uuid.UUID
) -> dict[str, Any]:
    """The bound parameters of the start (``start``'s, and those of a statement that runs the
    start with a read beside it)."""
    return {"work_id": work_id, "token": dispatch_token, "lease_ms": policy.lease_ms}


def has_live(session: orm.Session, agent_id: str, revision_id: str, kind: WorkKind) -> bool:
    """Whether an item of ``kind`` for the Agent's revision is queued or claimed."""
    params = {"agent_id": agent_id, "revision_id": revision_id, "kind": kind}
    return bool(session.execute(SQL["has_live"], params).scalar_one())


def unused_key(session: orm.Session, key_at: Callable[[int], WorkKey], start: int) -> WorkKey:
    """The first of ``key_at(start)``, ``key_at(start + 1)``, … that no item holds (for kinds
    whose ids count seconds, such as repairs)."""
    number = start
    while get(session, key := key_at(number)) is not None:
        number += 1
    return key


def database_now(session: orm.Session) -> dt.datetime:
    """The database clock (every queue time is measured on it)."""
    now: dt.datetime = session.execute(SQL["database_now"]).scalar_one()
    return now


def pending(session: orm.Session) -> int:
    """How many items are queued or claimed (delayed ones included)."""
    return int(session.execute(SQL["pending"]).scalar_one())


# -- transitions of a claim ---------------------------------------------------------------------


def renew(
    session: hot_statements.Target,
    policy: values.QueuePolicy,
    claim: values.Claim,
    *,
    progress_code: str | None = None,
) -> values.Claim:
    """Extend the lease of a live claim; an expired lease cannot be revived."""
    return renew_lease(session, policy, claim, progress_code=progress_code).claim


def renew_lease(
    session: hot_statements.Target,
    policy: values.QueuePolicy,
    claim: values.Claim,
    *,
    progress_code: str | None = None,
) -> values.Renewal:
    """``renew``, with the lease the database granted: how much of it was left when the
    statement answered, and the database clock then."""
    if progress_code is not None:
        codes.require(progress_code)
    row = _one_fenced(
        session, "renew", claim, lease_ms=policy.lease_ms, progress_code=progress_code
    )
    return values.Renewal(
        claim=work_rows.claim_of(row),
        lease_left_ms=float(row["lease_left_ms"]),
        database_now=row["database_now"],
    )


def release(session: hot_statements.Target, claim: values.Claim) -> None:
    """Give the item back (graceful shutdown): queued now, the attempt refunded."""
    _one_fenced(session, "release", claim)


def defer_dispatch(
    session: hot_statements.Target,
    work_id: str,
    dispatch_token: uuid.UUID,
    *,
    code: str,
    delay_ms: int,
) -> bool:
    """Give back a dispatch this worker cannot read: queued after ``delay_ms``, the attempt
    refunded; ``False`` when the token is not live (nothing changed)."""
    codes.require(code, codes.Outcome.PENDING)
    params = {"work_id": work_id, "token": dispatch_token, "code": code, "delay_ms": delay_ms}
    return hot_statements.first(session, HOT["defer_dispatch"], params) is not None


def complete(
    session: hot_statements.Target,
    claim: values.Claim,
    *,
    code: str = codes.Code.RECONCILE_SUCCEEDED,
    result_data: Mapping[str, Any] | None = None,
) -> values.WorkItem:
    """Finish the item successfully with a specific success code."""
    codes.require(code, codes.Outcome.SUCCESS)
    row = _one_fenced(session, "complete", claim, code=code, result_data=_json(result_data))
    return work_rows.item_of(row)


def fail(
    session: hot_statements.Target,
    claim: values.Claim,
    *,
    code: str,
    result_data: Mapping[str, Any] | None = None,
) -> values.WorkItem:
    """Finish the item as permanently failed."""
    codes.require(code)
    row = _one_fenced(session, "fail", claim, code=code, result_data=_json(result_data))
    return work_rows.item_of(row)


def retry(
    session: hot_statements.Target, policy: values.QueuePolicy, claim: values.Claim, *, code: str
) -> values.WorkItem:
    """A dependency failed: requeue after backoff keeping the attempt, or fail at the limit."""
    codes.require(code, codes.Outcome.RETRY)
    row = _one_fenced(session, "retry", claim, code=code, max_attempts=policy.max_attempts)
    return work_rows.item_of(row)


def defer(
    session: hot_statements.Target,
    policy: values.QueuePolicy,
    claim: values.Claim,
    *,
    code: str,
    delay_ms: int | None = None,
    runtime_failure: str | None = None,
) -> values.WorkItem:
    """Not done yet: requeue with the attempt refunded, or fail past the convergence deadline.

    Without ``delay_ms`` the item waits the backoff of its attempt count. Past
    ``created_at + convergence timeout`` the item fails with ``CONVERGENCE_DEADLINE_EXCEEDED``
    and ``{"timeoutMs": ...}``, with ``"runtimeFailure"`` when the pass observed one (the
    driver's code of what kept the runtime from becoming ready).
    """
    codes.require(code, codes.Outcome.PENDING)
    row = _one_fenced(
        session,
        "defer",
        claim,
        code=code,
        delay_ms=delay_ms,
        timeout_ms=policy.convergence_timeout_ms,
        runtime_failure=runtime_failure,
    )
    return work_rows.item_of(row)


# -- recovery -----------------------------------------------------------------------------------


def recover_stale(
    session: orm.Session, policy: values.QueuePolicy, *, limit: int = 100
) -> values.RecoveryReport:
    """Requeue or fail expired claims, and fail exhausted queued items.

    Expired run claims are requeued after backoff keeping their attempt, or failed with
    ``LEASE_EXPIRED`` at the limit; expired dispatch claims (the message never started) are
    requeued at once with the attempt refunded. Queued items at the limit fail with
    ``MAX_ATTEMPTS_EXHAUSTED``. Safe to run from several places at once.
    """
    params = {"limit": limit, "max_attempts": policy.max_attempts}
    expired = session.execute(SQL["recover_expired"], params).mappings().all()
    exhausted = session.execute(SQL["recover_exhausted"], params).mappings().all()
    queued = values.WorkState.QUEUED
    requeued = [row for row in expired if row["state"] == queued]
    failed = [row for row in expired if row["state"] != queued]
    return values.RecoveryReport(
        requeued=tuple(row["id"] for row in requeued),
        next_available_in_ms=min((int(row["available_in_ms"]) for row in requeued), default=None),
        failed=tuple(row["id"] for row in failed),
        exhausted=tuple(row["id"] for row in exhausted),
        failed_items=tuple(work_rows.item_of(row) for row in (*failed, *exhausted)),
    )


# -- statements -------------------------------------------------------------------------------


def _one_fenced(
    session: hot_statements.Target, name: str, claim: values.Claim, **params: Any
) -> Mapping[str, Any]:
    statement_params = {"work_id": claim.work_id, "token": claim.token, **params}
    row = hot_statements.first(session, HOT[name], statement_params)
    if row is None:
        raise errors.ClaimLost(claim.work_id)
    return row


def _json(data: Mapping[str, Any] | None) -> str | None:
    return None if data is None else json.dumps(data, separators=(",", ":"))
