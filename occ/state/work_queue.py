"""The durable work queue: enqueue, claim, start, renew, release, defer, retry, complete, fail,
recover_stale.

Plain SQL on the caller's session; never commits, never imports Celery. Every transition of a
claimed item is fenced by id + ``state='claimed'`` + the live token + an unexpired lease, all
measured on the database clock; zero rows changed raises ``ClaimLost``. Each transition writes
its audit evidence in the same statement. DESIGN §5 states the contract this module keeps.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ import codes, errors
from occ.state import values

LANE_LOCK_CLASS: Final = 0x0CC
"""First key of the transaction-scoped advisory locks that keep two claimers off one lane."""

_NOW = "clock_timestamp()"
_MS = "* interval '1 millisecond'"


def _backoff(attempts: str) -> str:
    """SQL for the delay after ``attempts`` claims: min(300 s, 1 s * 2^(a-1)), equal jitter."""
    cap = f"least(300000, 1000 * power(2, least(greatest({attempts} - 1, 0), 30)))"
    return f"(({cap}) * (0.5 + random() / 2)) {_MS}"


_FENCE = f"""
    w.id = :work_id AND w.state = 'claimed' AND w.claim_token = :token
    AND w.started_at IS NOT NULL AND w.lease_expires_at > {_NOW}"""

_CLEAR_CLAIM = "claim_token = NULL, claimed_at = NULL, started_at = NULL, lease_expires_at = NULL"

_RETURNING = """
    w.id, w.namespace_id, w.agent_id, w.revision_id, w.actor_id, w.namespace_target,
    w.agent_target, w.state, w.attempt_count, w.available_at, w.claim_token, w.claimed_at,
    w.started_at,
    w.lease_expires_at, w.completed_at, w.reason_code, w.result_data, w.last_progress_code,
    w.last_progress_at, w.created_at, w.updated_at"""


def _evidence(source: str, outcome: str, code: str) -> str:
    """An INSERT of one evidence audit row per row of ``source`` (a CTE of work rows)."""
    return f"""
    INSERT INTO occ.audit_events
      (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id, outcome,
       details)
    SELECT 'aud_' || gen_random_uuid(), 'mutation', 'reconcile', s.actor_id, s.namespace_id,
           CASE WHEN s.revision_id IS NOT NULL THEN 'agent_revision'
                WHEN s.agent_id IS NOT NULL THEN 'agent' ELSE 'namespace' END,
           COALESCE(s.revision_id, s.agent_id, s.namespace_id), s.id, {outcome},
           jsonb_build_object('reasonCode', {code}, 'attemptCount', s.attempt_count,
                              'workId', s.id)
             || CASE WHEN s.state = 'failed_permanent'
                     THEN jsonb_build_object('final', true) ELSE '{{}}'::jsonb END
      FROM {source} s"""


def _fenced(assignments: str, outcome: str, code: str) -> str:
    """One fenced transition of a running claim, with its evidence, returning the new row."""
    return f"""
    WITH moved AS (
      UPDATE occ.controller_work w SET {assignments}, updated_at = {_NOW}
       WHERE {_FENCE}
      RETURNING {_RETURNING}
    ), evidence AS ({_evidence("moved", outcome, code)})
    SELECT * FROM moved"""


# -- enqueue ------------------------------------------------------------------------------------

_ENQUEUE = sa.text(f"""
    INSERT INTO occ.controller_work AS w
      (id, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target,
       available_at, created_at, updated_at)
    VALUES (:work_id, :namespace_id, :agent_id, :revision_id, :actor_id, :namespace_target,
            :agent_target, {_NOW} + :delay_ms {_MS}, {_NOW}, {_NOW})
    ON CONFLICT (id) DO NOTHING
    RETURNING {_RETURNING}""")

_SELECT = sa.text(f"SELECT {_RETURNING} FROM occ.controller_work w WHERE w.id = :work_id")


def enqueue(
    session: orm.Session, work_id: str, owner: values.WorkOwner, *, delay_ms: int = 0
) -> values.WorkItem:
    """Admit a work item in the caller's transaction; idempotent on ``work_id``.

    An existing item with the same owner, actor and targets is returned unchanged, whatever its
    state; one with any difference raises ``IdempotencyConflict``.
    """
    params = {"work_id": work_id, "delay_ms": max(delay_ms, 0), **_owner_params(owner)}
    row = session.execute(_ENQUEUE, params).mappings().first()
    if row is None:
        row = session.execute(_SELECT, {"work_id": work_id}).mappings().one()
        if _owner(row) != owner:
            raise errors.IdempotencyConflict(
                "the work key already belongs to another owner, actor or target"
            )
    return _item(row)


def get(session: orm.Session, work_id: str) -> values.WorkItem | None:
    """The item, or ``None``."""
    row = session.execute(_SELECT, {"work_id": work_id}).mappings().first()
    return None if row is None else _item(row)


# -- claim and start ----------------------------------------------------------------------------

# Busy lanes are filtered with NOT IN rather than NOT EXISTS: NOT IN always runs as one hashed
# subplan over the claimed rows, while the anti-join's generic plan (psycopg prepares repeated
# statements) compared every candidate with every claimed row. Same rows, as lane is NOT NULL.
_CLAIM = sa.text(f"""
    WITH candidates AS (
      SELECT id, lane, available_at, created_at
        FROM occ.controller_work
       WHERE state = 'queued' AND available_at <= {_NOW} AND attempt_count < :max_attempts
       ORDER BY available_at, created_at, id
       LIMIT :window
    ), heads AS (
      SELECT id, available_at, created_at FROM (
        SELECT c.id, c.available_at, c.created_at,
               row_number() OVER (PARTITION BY c.lane
                                  ORDER BY c.available_at, c.created_at, c.id) AS position
          FROM candidates c
         WHERE c.lane NOT IN (SELECT busy.lane FROM occ.controller_work busy
                               WHERE busy.state = 'claimed')
      ) ranked
       WHERE position = 1
    ), locked AS (
      -- the limit applies after SKIP LOCKED, so a racing claimer that holds some heads does
      -- not leave this one empty-handed; the state, time and attempt conditions are repeated
      -- here because a row changed since the snapshot is re-checked against these only
      SELECT w.id FROM occ.controller_work w JOIN heads h ON h.id = w.id
       WHERE w.state = 'queued' AND w.available_at <= {_NOW}
         AND w.attempt_count < :max_attempts
         AND pg_try_advisory_xact_lock({LANE_LOCK_CLASS}, hashtext(w.lane))
       ORDER BY h.available_at, h.created_at, h.id
       LIMIT :limit
         FOR UPDATE OF w SKIP LOCKED
    )
    UPDATE occ.controller_work w
       SET state = 'claimed', attempt_count = w.attempt_count + 1,
           claim_token = gen_random_uuid(), claimed_at = {_NOW},
           lease_expires_at = {_NOW} + :dispatch_lease_ms {_MS}, updated_at = {_NOW}
      FROM locked
     WHERE w.id = locked.id AND w.state = 'queued'
    RETURNING {_RETURNING}""")

_START = sa.text(f"""
    UPDATE occ.controller_work w
       SET claim_token = gen_random_uuid(), started_at = {_NOW},
           lease_expires_at = {_NOW} + :lease_ms {_MS}, updated_at = {_NOW}
     WHERE w.id = :work_id AND w.state = 'claimed' AND w.claim_token = :token
       AND w.started_at IS NULL AND w.lease_expires_at > {_NOW}
    RETURNING {_RETURNING}""")

_CLAIM_RACE_RETRIES: Final = 3

_LIVE_CLAIMS = sa.text("SELECT count(*) FROM occ.controller_work WHERE state = 'claimed'")


def claim(
    session: orm.Session, policy: values.QueuePolicy, *, limit: int, window: int | None = None
) -> list[values.Claim]:
    """Claim up to ``limit`` ready items, at most one per lane, each with a dispatch token.

    One statement: scans a bounded window of the ready index, keeps the head of every lane that
    has no live claim, and locks those heads with ``SKIP LOCKED`` plus a non-blocking advisory
    lock on the lane, so racing claimers skip each other instead of waiting or colliding.
    """
    if limit <= 0:
        return []
    params = {
        "limit": limit,
        "window": window or max(limit * 20, 1000),
        "max_attempts": policy.max_attempts,
        "dispatch_lease_ms": policy.dispatch_lease_ms,
    }
    for attempt in range(_CLAIM_RACE_RETRIES):
        try:
            # a savepoint: a lane collision (the unique index backstop) costs one retry, not
            # the caller's transaction
            with session.begin_nested():
                rows = session.execute(_CLAIM, params).mappings().all()
            break
        except sa_exc.IntegrityError:
            if attempt == _CLAIM_RACE_RETRIES - 1:
                raise
    return [
        _claim(row)
        for row in sorted(rows, key=lambda r: (r["available_at"], r["created_at"], r["id"]))
    ]


def start(
    session: orm.Session, policy: values.QueuePolicy, dispatch: values.Claim
) -> values.Claim | None:
    """Exchange a dispatch token, once, for a run token and the full lease.

    ``None`` when the token is spent (a redelivered message) or its dispatch lease lapsed.
    """
    return start_token(session, policy, dispatch.work_id, dispatch.token)


def start_token(
    session: orm.Session, policy: values.QueuePolicy, work_id: str, dispatch_token: uuid.UUID
) -> values.Claim | None:
    """``start`` for a work id and dispatch token as a task message carries them."""
    row = (
        session.execute(
            _START,
            {"work_id": work_id, "token": dispatch_token, "lease_ms": policy.lease_ms},
        )
        .mappings()
        .first()
    )
    return None if row is None else _claim(row)


def database_now(session: orm.Session) -> dt.datetime:
    """The database clock (every queue time is measured on it)."""
    now: dt.datetime = session.execute(sa.text(f"SELECT {_NOW}")).scalar_one()
    return now


_PENDING = sa.text("SELECT count(*) FROM occ.controller_work WHERE state IN ('queued', 'claimed')")


def pending(session: orm.Session) -> int:
    """How many items are queued or claimed (delayed ones included)."""
    return int(session.execute(_PENDING).scalar_one())


def live_claims(session: orm.Session) -> int:
    """How many items are claimed right now (dispatched or running)."""
    return int(session.execute(_LIVE_CLAIMS).scalar_one())


# -- transitions of a running claim -------------------------------------------------------------

_RENEW = sa.text(f"""
    UPDATE occ.controller_work w
       SET lease_expires_at = {_NOW} + :lease_ms {_MS}, updated_at = {_NOW},
           last_progress_code = COALESCE(CAST(:progress_code AS text), w.last_progress_code),
           last_progress_at = CASE WHEN CAST(:progress_code AS text) IS NULL
                                   THEN w.last_progress_at
                                   ELSE {_NOW} END
     WHERE {_FENCE}
    RETURNING {_RETURNING}""")

_RELEASE = sa.text(f"""
    WITH moved AS (
      UPDATE occ.controller_work w
         SET state = 'queued', {_CLEAR_CLAIM}, attempt_count = greatest(w.attempt_count - 1, 0),
             available_at = {_NOW}, last_progress_code = 'CLAIM_RELEASED',
             last_progress_at = {_NOW}, updated_at = {_NOW}
       WHERE w.id = :work_id AND w.state = 'claimed' AND w.claim_token = :token
         AND w.lease_expires_at > {_NOW}
      RETURNING {_RETURNING}
    ), evidence AS ({_evidence("moved", "'success'", "'CLAIM_RELEASED'")})
    SELECT * FROM moved""")

_COMPLETE = sa.text(
    _fenced(
        f"state = 'succeeded', {_CLEAR_CLAIM}, completed_at = {_NOW}, reason_code = :code, "
        "result_data = CAST(:result_data AS jsonb)",
        "'success'",
        ":code",
    )
)

_FAIL = sa.text(
    _fenced(
        f"state = 'failed_permanent', {_CLEAR_CLAIM}, completed_at = {_NOW}, reason_code = :code, "
        "result_data = CAST(:result_data AS jsonb)",
        "'failure'",
        ":code",
    )
)

_RETRY = sa.text(
    _fenced(
        f"""{_CLEAR_CLAIM},
        state = CASE WHEN w.attempt_count >= :max_attempts THEN 'failed_permanent'
                     ELSE 'queued' END,
        completed_at = CASE WHEN w.attempt_count >= :max_attempts THEN {_NOW} END,
        reason_code = CASE WHEN w.attempt_count >= :max_attempts THEN :code END,
        available_at = CASE WHEN w.attempt_count >= :max_attempts THEN w.available_at
                            ELSE {_NOW} + {_backoff("w.attempt_count")} END,
        last_progress_code = :code, last_progress_at = {_NOW}""",
        "'failure'",
        ":code",
    )
)

_DEADLINE_PASSED = f"(w.created_at + :timeout_ms {_MS} <= {_NOW})"

_DEFER = sa.text(
    _fenced(
        f"""{_CLEAR_CLAIM},
        state = CASE WHEN {_DEADLINE_PASSED} THEN 'failed_permanent' ELSE 'queued' END,
        completed_at = CASE WHEN {_DEADLINE_PASSED} THEN {_NOW} END,
        reason_code = CASE WHEN {_DEADLINE_PASSED} THEN 'CONVERGENCE_DEADLINE_EXCEEDED' END,
        result_data = CASE WHEN {_DEADLINE_PASSED}
                           THEN jsonb_build_object('timeoutMs', CAST(:timeout_ms AS bigint)) END,
        attempt_count = CASE WHEN {_DEADLINE_PASSED} THEN w.attempt_count
                             ELSE greatest(w.attempt_count - 1, 0) END,
        available_at = CASE WHEN {_DEADLINE_PASSED} THEN w.available_at
                            WHEN CAST(:delay_ms AS bigint) IS NOT NULL
                            THEN {_NOW} + CAST(:delay_ms AS bigint) {_MS}
                            ELSE {_NOW} + {_backoff("w.attempt_count")} END,
        last_progress_code = :code, last_progress_at = {_NOW}""",
        "CASE WHEN s.state = 'failed_permanent' THEN 'failure' ELSE 'success' END",
        "CASE WHEN s.state = 'failed_permanent' THEN 'CONVERGENCE_DEADLINE_EXCEEDED' "
        "ELSE :code END",
    )
)


def renew(
    session: orm.Session,
    policy: values.QueuePolicy,
    claim: values.Claim,
    *,
    progress_code: str | None = None,
) -> values.Claim:
    """Extend the lease of a live claim; an expired lease cannot be revived."""
    if progress_code is not None:
        codes.require(progress_code)
    row = _one_fenced(session, _RENEW, claim, lease_ms=policy.lease_ms, progress_code=progress_code)
    return _claim(row)


def release(session: orm.Session, claim: values.Claim) -> None:
    """Give the item back (graceful shutdown): queued now, the attempt refunded."""
    _one_fenced(session, _RELEASE, claim)


def complete(
    session: orm.Session,
    claim: values.Claim,
    *,
    code: str = "RECONCILE_SUCCEEDED",
    result_data: Mapping[str, Any] | None = None,
) -> values.WorkItem:
    """Finish the item successfully with a specific success code."""
    codes.require(code, codes.Outcome.SUCCESS)
    return _item(_one_fenced(session, _COMPLETE, claim, code=code, result_data=_json(result_data)))


def fail(
    session: orm.Session,
    claim: values.Claim,
    *,
    code: str,
    result_data: Mapping[str, Any] | None = None,
) -> values.WorkItem:
    """Finish the item as permanently failed."""
    codes.require(code)
    return _item(_one_fenced(session, _FAIL, claim, code=code, result_data=_json(result_data)))


def retry(
    session: orm.Session, policy: values.QueuePolicy, claim: values.Claim, *, code: str
) -> values.WorkItem:
    """A dependency failed: requeue after backoff keeping the attempt, or fail at the limit."""
    codes.require(code, codes.Outcome.RETRY)
    return _item(_one_fenced(session, _RETRY, claim, code=code, max_attempts=policy.max_attempts))


def defer(
    session: orm.Session,
    policy: values.QueuePolicy,
    claim: values.Claim,
    *,
    code: str,
    delay_ms: int | None = None,
) -> values.DeferResult:
    """Not done yet: requeue with the attempt refunded, or fail past the convergence deadline.

    Without ``delay_ms`` the item waits the backoff of its attempt count. Past
    ``created_at + convergence timeout`` the item fails with ``CONVERGENCE_DEADLINE_EXCEEDED``
    and ``{"timeoutMs": ...}``.
    """
    codes.require(code, codes.Outcome.PENDING)
    row = _one_fenced(
        session,
        _DEFER,
        claim,
        code=code,
        delay_ms=delay_ms,
        timeout_ms=policy.convergence_timeout_ms,
    )
    if row["state"] == values.WorkState.FAILED_PERMANENT:
        return values.DeferResult(deadline_exceeded=True, available_at=None)
    return values.DeferResult(deadline_exceeded=False, available_at=row["available_at"])


# -- recovery -----------------------------------------------------------------------------------

_FAIL_PROVISIONING_NAMESPACES = f"""
    failed_namespaces AS (
      UPDATE occ.namespaces n SET status = 'failed', updated_at = {_NOW}
        FROM moved m
       WHERE m.state = 'failed_permanent' AND m.namespace_target = 'ready'
         AND n.id = m.namespace_id AND n.status = 'provisioning' AND n.deleted_at IS NULL
      RETURNING n.id, m.id AS work_id, m.actor_id, m.reason_code
    ), namespace_evidence AS (
      INSERT INTO occ.audit_events
        (id, kind, action, actor_id, namespace_id, resource_kind, resource_id, work_id,
         outcome, details)
      SELECT 'aud_' || gen_random_uuid(), 'mutation', 'namespaces.lifecycle.ensure', f.actor_id,
             f.id, 'namespace', f.id, f.work_id, 'failure',
             jsonb_build_object('reasonCode', f.reason_code, 'status', 'failed')
        FROM failed_namespaces f
    )"""

_RECOVER_EXPIRED = sa.text(f"""
    WITH stale AS (
      SELECT id FROM occ.controller_work
       WHERE state = 'claimed' AND lease_expires_at <= {_NOW}
       ORDER BY lease_expires_at, id
       LIMIT :limit
       FOR UPDATE SKIP LOCKED
    ), moved AS (
      UPDATE occ.controller_work w
         SET {_CLEAR_CLAIM}, result_data = NULL, updated_at = {_NOW},
             state = CASE WHEN w.started_at IS NOT NULL AND w.attempt_count >= :max_attempts
                          THEN 'failed_permanent' ELSE 'queued' END,
             completed_at = CASE WHEN w.started_at IS NOT NULL
                                  AND w.attempt_count >= :max_attempts THEN {_NOW} END,
             reason_code = CASE WHEN w.started_at IS NOT NULL
                                 AND w.attempt_count >= :max_attempts THEN 'LEASE_EXPIRED' END,
             attempt_count = CASE WHEN w.started_at IS NULL
                                  THEN greatest(w.attempt_count - 1, 0)
                                  ELSE w.attempt_count END,
             available_at = CASE WHEN w.started_at IS NULL THEN {_NOW}
                                 WHEN w.attempt_count >= :max_attempts THEN w.available_at
                                 ELSE {_NOW} + {_backoff("w.attempt_count")} END,
             last_progress_code = CASE WHEN w.started_at IS NULL THEN 'DISPATCH_EXPIRED'
                                       ELSE 'LEASE_EXPIRED' END,
             last_progress_at = {_NOW}
        FROM stale
       WHERE w.id = stale.id AND w.state = 'claimed' AND w.lease_expires_at <= {_NOW}
      RETURNING {_RETURNING}
    ), evidence AS ({_evidence("moved", "'failure'", "s.last_progress_code")}),
    {_FAIL_PROVISIONING_NAMESPACES}
    SELECT m.id, m.state, (SELECT array_agg(id) FROM failed_namespaces) AS failed_namespaces
      FROM moved m""")

_RECOVER_EXHAUSTED = sa.text(f"""
    WITH exhausted AS (
      SELECT id FROM occ.controller_work
       WHERE state = 'queued' AND attempt_count >= :max_attempts
       ORDER BY available_at, id
       LIMIT :limit
       FOR UPDATE SKIP LOCKED
    ), moved AS (
      UPDATE occ.controller_work w
         SET state = 'failed_permanent', completed_at = {_NOW},
             reason_code = 'MAX_ATTEMPTS_EXHAUSTED', updated_at = {_NOW}
        FROM exhausted
       WHERE w.id = exhausted.id AND w.state = 'queued' AND w.attempt_count >= :max_attempts
      RETURNING {_RETURNING}
    ), evidence AS ({_evidence("moved", "'failure'", "'MAX_ATTEMPTS_EXHAUSTED'")}),
    {_FAIL_PROVISIONING_NAMESPACES}
    SELECT m.id, m.state, (SELECT array_agg(id) FROM failed_namespaces) AS failed_namespaces
      FROM moved m""")


_NEXT_AVAILABLE_IN_MS = sa.text(f"""
    SELECT greatest(0, ceil(extract(epoch FROM min(available_at) - {_NOW}) * 1000))
      FROM occ.controller_work WHERE id = ANY(:ids)""")


def recover_stale(
    session: orm.Session, policy: values.QueuePolicy, *, limit: int = 100
) -> values.RecoveryReport:
    """Requeue or fail expired claims, and fail exhausted queued items.

    Expired run claims are requeued after backoff keeping their attempt, or failed with
    ``LEASE_EXPIRED`` at the limit; expired dispatch claims (the message never started) are
    requeued at once with the attempt refunded. Queued items at the limit fail with
    ``MAX_ATTEMPTS_EXHAUSTED``. A Namespace still provisioning whose ``ready`` work failed here
    becomes ``failed`` in the same statement. Safe to run from several places at once.
    """
    params = {"limit": limit, "max_attempts": policy.max_attempts}
    expired = session.execute(_RECOVER_EXPIRED, params).mappings().all()
    exhausted = session.execute(_RECOVER_EXHAUSTED, params).mappings().all()
    failed_namespaces = {
        namespace_id
        for row in (*expired, *exhausted)
        for namespace_id in (row["failed_namespaces"] or ())
    }
    requeued = tuple(r["id"] for r in expired if r["state"] == values.WorkState.QUEUED)
    next_available_in_ms = None
    if requeued:
        next_available_in_ms = int(
            session.execute(_NEXT_AVAILABLE_IN_MS, {"ids": list(requeued)}).scalar_one()
        )
    return values.RecoveryReport(
        requeued=requeued,
        next_available_in_ms=next_available_in_ms,
        failed=tuple(r["id"] for r in expired if r["state"] == values.WorkState.FAILED_PERMANENT),
        exhausted=tuple(r["id"] for r in exhausted),
        failed_namespaces=tuple(sorted(failed_namespaces)),
    )


# -- helpers ------------------------------------------------------------------------------------


def _one_fenced(
    session: orm.Session, statement: sa.TextClause, claim: values.Claim, **params: Any
) -> sa.RowMapping:
    row = (
        session.execute(statement, {"work_id": claim.work_id, "token": claim.token, **params})
        .mappings()
        .first()
    )
    if row is None:
        raise errors.ClaimLost(claim.work_id)
    return row


def _json(data: Mapping[str, Any] | None) -> str | None:
    return None if data is None else json.dumps(data, separators=(",", ":"))


def _owner_params(owner: values.WorkOwner) -> dict[str, str | None]:
    return {
        "namespace_id": owner.namespace_id,
        "agent_id": owner.agent_id,
        "revision_id": owner.revision_id,
        "actor_id": owner.actor_id,
        "namespace_target": owner.namespace_target,
        "agent_target": owner.agent_target,
    }


def _owner(row: sa.RowMapping) -> values.WorkOwner:
    return values.WorkOwner(
        namespace_id=row["namespace_id"],
        actor_id=row["actor_id"],
        agent_id=row["agent_id"],
        revision_id=row["revision_id"],
        namespace_target=row["namespace_target"],
        agent_target=row["agent_target"],
    )


def _item(row: sa.RowMapping) -> values.WorkItem:
    return values.WorkItem(
        id=row["id"],
        owner=_owner(row),
        state=values.WorkState(row["state"]),
        attempt_count=row["attempt_count"],
        available_at=row["available_at"],
        claimed=row["claim_token"] is not None,
        started=row["started_at"] is not None,
        lease_expires_at=row["lease_expires_at"],
        completed_at=row["completed_at"],
        reason_code=row["reason_code"],
        result_data=row["result_data"],
        last_progress_code=row["last_progress_code"],
        last_progress_at=row["last_progress_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _claim(row: sa.RowMapping) -> values.Claim:
    token = row["claim_token"]
    return values.Claim(
        work_id=row["id"],
        token=token if isinstance(token, uuid.UUID) else uuid.UUID(str(token)),
        owner=_owner(row),
        attempt_count=row["attempt_count"],
        claimed_at=row["claimed_at"],
        lease_expires_at=row["lease_expires_at"],
        created_at=row["created_at"],
        running=row["started_at"] is not None,
    )
