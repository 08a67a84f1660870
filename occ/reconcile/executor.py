"""The worker-side use cases: claim a batch, recover stale claims, run one claimed item.

``run`` exchanges the dispatch token first (a redelivered message ends here with no effect),
then runs the reconciler of the item's kind inside a ``ClaimContext``. A lost claim publishes
nothing; a worker shutting down releases the claim with the attempt refunded.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Final

import sqlalchemy as sa

from occ import codes, errors, metrics, observability
from occ.db import Database
from occ.drivers.compute import base
from occ.reconcile import agent_delete, agent_stop, environment, namespace, outcome, revision
from occ.reconcile.context import ClaimContext
from occ.state import namespaces, values, work_queue

CLAIM_LOCK: Final = sa.text("SELECT pg_advisory_xact_lock(3276, 1)")
"""Serializes claim batches, so the in-flight budget holds across control workers."""

Reconciler = Callable[[environment.Worker, ClaimContext], outcome.PassResult]
Worker = environment.Worker


def claim_batch(
    database: Database, policy: values.QueuePolicy, *, max_in_flight: int
) -> list[values.Claim]:
    """Claim at most ``max_in_flight`` minus the live claims (so nothing outlives its lease
    waiting in the broker)."""
    with database.transaction() as session:
        session.execute(CLAIM_LOCK)
        room = max_in_flight - work_queue.live_claims(session)
        if room <= 0:
            return []
        with metrics.CLAIM_DURATION.time():
            return work_queue.claim(session, policy, limit=room)


def release_dispatches(database: Database, claims: list[values.Claim]) -> None:
    """Give back dispatch claims whose messages could not be sent (attempts refunded)."""
    for claim in claims:
        try:
            with database.transaction() as session:
                work_queue.release(session, claim)
        except errors.ClaimLost:
            continue


def recover(database: Database, policy: values.QueuePolicy) -> values.RecoveryReport:
    with database.transaction() as session:
        report = work_queue.recover_stale(session, policy)
    metrics.RECOVERED.labels("requeued").inc(len(report.requeued))
    metrics.RECOVERED.labels("failed").inc(len(report.failed) + len(report.exhausted))
    return report


def run(worker: Worker, work_id: str, dispatch_token: str) -> outcome.PassResult | None:
    """Run one dispatched item; ``None`` when the message was stale (nothing happened)."""
    started = time.perf_counter()
    try:
        token = uuid.UUID(dispatch_token)
    except ValueError:
        return None
    with worker.database.transaction() as session:
        claim = work_queue.start_token(session, worker.policy, work_id, token)
    if claim is None:
        return None
    reconciler = _reconciler_for(claim.owner)
    fields = _log_fields(claim)
    with ClaimContext(worker.database, worker.policy, claim, shutdown=worker.shutdown) as context:
        try:
            result = reconciler(worker, context)
        except (base.Aborted, errors.ClaimLost):
            return _stopped(worker, context, fields)
        except errors.DependencyUnavailable as exc:
            observability.log(
                "worker.error",
                level=logging.ERROR,
                code="WORKER_UNAVAILABLE",
                error=exc.code,
                **fields,
            )
            return None
        except (SystemExit, KeyboardInterrupt):
            # the worker is being torn down (e.g. the end of a soft shutdown): give the claim back
            _release(worker, context)
            raise
        except Exception as exc:  # any surprise is a retry, never a crash
            observability.log(
                "worker.error",
                level=logging.ERROR,
                code="DEPENDENCY_UNAVAILABLE",
                error=type(exc).__name__,
                **fields,
            )
            retried = _retry_after_surprise(worker, context)
            if retried is None:
                return None
            result = retried
    _measure(claim, result, time.perf_counter() - started)
    observability.log(
        "worker.completed",
        outcome=str(result.outcome),
        code=result.code,
        durationMs=round((time.perf_counter() - started) * 1000, 1),
        **fields,
    )
    return result


def _reconciler_for(owner: values.WorkOwner) -> Reconciler:
    if owner.agent_id is None:
        return namespace.reconcile
    if owner.revision_id is not None:
        return revision.reconcile
    if owner.agent_target == "stopped":
        return agent_stop.reconcile
    if owner.agent_target == "deleted":
        return agent_delete.reconcile
    return _invalid_target


def _invalid_target(worker: environment.Worker, context: ClaimContext) -> outcome.PassResult:
    with worker.database.transaction() as session:
        work_queue.fail(session, context.claim, code="INVALID_TARGET")
    return outcome.permanent("INVALID_TARGET")


def _stopped(
    worker: Worker, context: ClaimContext, fields: dict[str, Any]
) -> outcome.PassResult | None:
    if context.interrupted and not context.lost:
        try:
            with worker.database.transaction() as session:
                work_queue.release(session, context.claim)
        except errors.ClaimLost:
            pass
        else:
            observability.log(
                "worker.pass-interrupted", level=logging.WARNING, code="CLAIM_RELEASED", **fields
            )
            return outcome.PassResult(codes.Outcome.PENDING, "CLAIM_RELEASED", 0)
    metrics.CLAIMS_LOST.inc()
    observability.log("worker.error", level=logging.WARNING, code="CLAIM_LOST", **fields)
    return None


def _release(worker: Worker, context: ClaimContext) -> None:
    try:
        with worker.database.transaction() as session:
            work_queue.release(session, context.claim)
    except errors.OccError:
        return


def _retry_after_surprise(worker: Worker, context: ClaimContext) -> outcome.PassResult | None:
    try:
        with worker.database.transaction() as session:
            item = work_queue.retry(
                session, worker.policy, context.claim, code="DEPENDENCY_UNAVAILABLE"
            )
            owner = context.claim.owner
            if (
                item.state == values.WorkState.FAILED_PERMANENT
                and owner.namespace_target == "ready"
            ):
                # a Namespace whose provisioning failed for good must not stay provisioning
                namespaces.transition(
                    session, owner.namespace_id, expected="provisioning", status="failed"
                )
    except errors.OccError:
        return None
    if item.state == values.WorkState.FAILED_PERMANENT:
        return outcome.permanent("DEPENDENCY_UNAVAILABLE")
    return outcome.PassResult(codes.Outcome.RETRY, "DEPENDENCY_UNAVAILABLE")


_AGENT_OPERATIONS: Final = {
    "REVISION_ACTIVATED": "deploy",
    "AGENT_STOPPED": "stop",
    "AGENT_DELETED": "delete",
}


def _work_kind(owner: values.WorkOwner) -> str:
    if owner.agent_id is None:
        return "namespace"
    return "agent" if owner.revision_id is None else "agent_revision"


def _measure(claim: values.Claim, result: outcome.PassResult, seconds: float) -> None:
    kind = _work_kind(claim.owner)
    metrics.RECONCILIATION_ATTEMPTS.labels(kind, str(result.outcome)).inc()
    metrics.RECONCILIATION_DURATION.labels(kind).observe(seconds)
    operation = _AGENT_OPERATIONS.get(result.code)
    if operation is not None and ":maintenance:" not in claim.work_id:
        since_admission = dt.datetime.now(dt.UTC) - claim.created_at
        metrics.AGENT_OPERATION_DURATION.labels(operation).observe(
            max(since_admission.total_seconds(), 0.0)
        )


def _log_fields(claim: values.Claim) -> dict[str, Any]:
    owner = claim.owner
    operation = (
        f"namespace.{owner.namespace_target}"
        if owner.agent_id is None
        else f"agent.{owner.agent_target}"
        if owner.revision_id is None
        else "agent_revision.reconcile"
    )
    return {
        "workId": claim.work_id,
        "attempt": claim.attempt_count,
        "operation": operation,
        "namespaceId": owner.namespace_id,
        "agentId": owner.agent_id,
        "revisionId": owner.revision_id,
    }
