"""The worker-side use cases: claim a batch, recover stale claims, run one claimed item.

``run`` exchanges the dispatch token first (a redelivered message ends here with no effect),
one statement on an autocommit connection (for Namespace work the same statement reads the
Namespace, and its checks follow in an autocommit session), then runs the reconciler
registered for the item's kind inside a ``ClaimContext``. A lost claim publishes nothing; a
worker shutting down releases the claim with the attempt refunded.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.reconcile import (
    agent_delete,
    agent_stop,
    environment,
    kinds,
    namespace,
    outcome,
    revision,
    settle,
)
from occ.reconcile.context import ClaimContext
from occ.state import runtime_observations, starts, values, work_keys, work_queue
from occ.state.db import Database
from occ.state.work_keys import WorkKey, WorkKind
from occ.telemetry import metrics, observability

Reconciler = Callable[[environment.Worker, ClaimContext], outcome.PassResult]
Worker = environment.Worker

RECONCILERS: Final[Mapping[WorkKind, Reconciler]] = {
    WorkKind.NAMESPACE_READY: namespace.reconcile,
    WorkKind.NAMESPACE_DELETED: namespace.reconcile,
    WorkKind.AGENT_STOPPED: agent_stop.reconcile,
    WorkKind.AGENT_DELETED: agent_delete.reconcile,
    WorkKind.REVISION_RECONCILE: revision.reconcile,
    WorkKind.REVISION_MAINTENANCE: revision.reconcile,
}
"""The reconciler of each work kind: what ``run`` dispatches to."""

STARTED_WITH_RELOAD: Final = frozenset({WorkKind.NAMESPACE_READY, WorkKind.NAMESPACE_DELETED})
"""Kinds whose start reads their Namespace in the same statement (``occ.state.starts``) and whose
checks on it (``namespace.prepare``, refusals included) run right after, with no transaction
around the reads: the reconciler finds the result in ``ClaimContext.prepared``."""

_AGENT_OPERATIONS: Final[Mapping[str, str]] = {
    codes.Code.REVISION_ACTIVATED: "deploy",
    codes.Code.AGENT_STOPPED: "stop",
    codes.Code.AGENT_DELETED: "delete",
}
"""Success codes that end an Agent operation an operator waits for (admission to done)."""


def claim_batch(
    database: Database, policy: values.QueuePolicy, *, max_in_flight: int
) -> list[values.Claim]:
    """Claim what the fleet's in-flight budget has room for (committed before dispatch)."""
    with database.transaction() as session, metrics.CLAIM_DURATION.time():
        return work_queue.claim_within_budget(session, policy, max_in_flight=max_in_flight)


CLAIM_SHARE: Final = 4
"""The control worker claims once at least 1/``CLAIM_SHARE`` of the in-flight budget is free."""


def claim_share(
    database: Database, policy: values.QueuePolicy, *, max_in_flight: int
) -> work_queue.Batch:
    """What ``occ.claim`` runs: a batch once a quarter of the budget is free, and whether a
    backlog remains (then the control worker claims again soon)."""
    min_room = max(max_in_flight // CLAIM_SHARE, 1)
    with database.transaction() as session, metrics.CLAIM_DURATION.time():
        return work_queue.claim_share(
            session, policy, max_in_flight=max_in_flight, min_room=min_room
        )


def release_dispatches(database: Database, claims: list[values.Claim]) -> None:
    """Give back dispatch claims whose messages could not be sent (attempts refunded)."""
    for claim in claims:
        try:
            with database.autocommit_connection() as connection:  # one statement each
                work_queue.release(connection, claim)
        except errors.ClaimLost:
            continue


def recover(database: Database, policy: values.QueuePolicy) -> values.RecoveryReport:
    """Requeue or fail stale claims; the kinds' failure effects commit with them."""
    with database.transaction() as session:
        report = work_queue.recover_stale(session, policy)
        for item in report.failed_items:
            kinds.settle(session, item)
    metrics.RECOVERED.labels("requeued").inc(len(report.requeued))
    metrics.RECOVERED.labels("failed").inc(len(report.failed) + len(report.exhausted))
    return report


def observe_active_revisions(worker: Worker) -> int:
    """Enqueue a maintenance pass, due now, for every active revision on this driver.

    Beat runs it every maintenance interval (and so right after a fleet starts): a gateway
    that died while nothing watched is found within one interval. The key is the current
    interval's bucket, the one a revision's own maintenance chain would use, so a seed and a
    chain never run the same observation twice. Returns how many active revisions it covered.
    """
    interval_s = worker.driver.capabilities.maintenance_interval_s
    if not interval_s:
        return 0
    interval_ms = max(int(interval_s * 1000), 1)
    covered = 0
    with worker.database.transaction() as session:
        bucket = int(work_queue.database_now(session).timestamp() * 1000) // interval_ms
        for active in runtime_observations.active_revisions(session, worker.driver.name):
            owner = values.WorkOwner(
                namespace_id=active.namespace_id,
                actor_id=active.actor_id,
                agent_id=active.agent_id,
                revision_id=active.revision_id,
            )
            key = work_keys.revision_maintenance(active.revision_id, bucket)
            try:
                with session.begin_nested():
                    work_queue.enqueue(session, key, owner)
            except errors.IdempotencyConflict:
                continue  # the chain's item for this bucket exists under another owner
            covered += 1
    return covered


def run(worker: Worker, work_id: str, dispatch_token: str) -> outcome.PassResult | None:
    """Run one dispatched item; ``None`` when the message was stale (nothing happened)."""
    started = time.perf_counter()
    try:
        token = uuid.UUID(dispatch_token)
    except ValueError:
        return None
    context, surprise = _start(worker, work_id, token)
    if context is None:
        return None
    claim = context.claim
    fields = _log_fields(claim)
    with context:
        try:
            if surprise is not None:
                raise surprise
            result = RECONCILERS[claim.kind](worker, context)
        except (base.Aborted, errors.ClaimLost):
            return _stopped(worker, context, fields)
        except errors.DependencyUnavailable as exc:
            observability.log(
                "worker.error",
                level=logging.ERROR,
                code=codes.Code.WORKER_UNAVAILABLE,
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
                code=codes.Code.DEPENDENCY_UNAVAILABLE,
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


def _start(
    worker: Worker, work_id: str, token: uuid.UUID
) -> tuple[ClaimContext | None, Exception | None]:
    """Exchange the dispatch token (one statement on an autocommit connection);
    ``(None, None)`` for a stale message. A kind started with its reload is prepared too."""
    if _kind(work_id) in STARTED_WITH_RELOAD:
        return _start_namespace_work(worker, work_id, token)
    with worker.database.autocommit_connection() as connection:
        claim = work_queue.start_token(connection, worker.policy, work_id, token)
    return (None if claim is None else _context(worker, claim)), None


def _start_namespace_work(
    worker: Worker, work_id: str, token: uuid.UUID
) -> tuple[ClaimContext | None, Exception | None]:
    """The start that reads the Namespace beside it, then the pass's checks on that Namespace
    (an autocommit session). An exception of the checks is returned, to be handled as the
    pass's own: the start stands."""
    with worker.database.autocommit_connection() as connection:
        started = starts.start_namespace_work(connection, worker.policy, work_id, token)
    if started is None:
        return None, None
    context = _context(worker, started.claim)
    try:
        with worker.database.autocommit() as session:
            context.prepared = namespace.prepare(session, worker, context, started.namespace)
    except Exception as exc:  # handled as the pass's own, once started
        return context, exc
    return context, None


def _context(worker: Worker, claim: values.Claim) -> ClaimContext:
    return ClaimContext(worker.database, worker.policy, claim, shutdown=worker.shutdown)


def _kind(work_id: str) -> WorkKind | None:
    try:
        return WorkKey.parse(work_id).kind
    except ValueError:
        return None


def _stopped(
    worker: Worker, context: ClaimContext, fields: dict[str, Any]
) -> outcome.PassResult | None:
    if context.interrupted and not context.lost:
        try:
            with worker.database.autocommit_connection() as connection:  # one statement
                work_queue.release(connection, context.claim)
        except errors.ClaimLost:
            pass
        else:
            observability.log(
                "worker.pass-interrupted",
                level=logging.WARNING,
                code=codes.Code.CLAIM_RELEASED,
                **fields,
            )
            return outcome.PassResult(codes.Outcome.PENDING, codes.Code.CLAIM_RELEASED, 0)
    metrics.CLAIMS_LOST.inc()
    observability.log("worker.error", level=logging.WARNING, code=codes.Code.CLAIM_LOST, **fields)
    return None


def _release(worker: Worker, context: ClaimContext) -> None:
    try:
        with worker.database.autocommit_connection() as connection:  # one statement
            work_queue.release(connection, context.claim)
    except errors.OccError:
        return


def _retry_after_surprise(worker: Worker, context: ClaimContext) -> outcome.PassResult | None:
    try:
        with worker.database.transaction() as session:
            return settle.retry(
                session, worker.policy, context.claim, codes.Code.DEPENDENCY_UNAVAILABLE
            )
    except errors.OccError:
        return None


def _measure(claim: values.Claim, result: outcome.PassResult, seconds: float) -> None:
    kind = kinds.KINDS[claim.kind].metric_label
    metrics.RECONCILIATION_ATTEMPTS.labels(kind, str(result.outcome)).inc()
    metrics.RECONCILIATION_DURATION.labels(kind).observe(seconds)
    operation = _AGENT_OPERATIONS.get(result.code)
    if operation is not None and claim.kind != WorkKind.REVISION_MAINTENANCE:
        since_admission = dt.datetime.now(dt.UTC) - claim.created_at
        metrics.AGENT_OPERATION_DURATION.labels(operation).observe(
            max(since_admission.total_seconds(), 0.0)
        )


def _log_fields(claim: values.Claim) -> dict[str, Any]:
    owner = claim.owner
    return {
        "workId": claim.work_id,
        "attempt": claim.attempt_count,
        "operation": kinds.KINDS[claim.kind].operation,
        "namespaceId": owner.namespace_id,
        "agentId": owner.agent_id,
        "revisionId": owner.revision_id,
    }
