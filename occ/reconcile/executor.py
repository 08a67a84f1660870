"""The worker-side use cases: claim a batch, recover stale claims, run one claimed item.

``run`` looks up the handler of the item's kind (``registry``), starts the claim its way (the
dispatch token exchanged once: a redelivered message ends here with no effect), then runs the
handler's reconciler inside a ``ClaimContext`` that carries the kind's failure effect. A lost
claim publishes nothing; a worker shutting down releases the claim with the attempt refunded;
an unexpected exception is a bug: logged with its traceback, counted, and retried under the
queue's policy. Nothing here names a kind.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from typing import Any, Final

from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.reconcile import (
    environment,
    kinds,
    observer,
    outcome,
    pass_report,
    registry,
    settle,
    upkeep,
)
from occ.reconcile.context import ClaimContext
from occ.state import values, work_claims, work_queue, work_reads
from occ.state.db import Database
from occ.state.work_keys import WorkKey
from occ.telemetry import clock_skew, metrics, observability

Worker = environment.Worker


def claim_batch(
    database: Database, policy: values.QueuePolicy, *, max_in_flight: int
) -> list[values.Claim]:
    """Claim what the fleet's in-flight budget has room for (committed before dispatch)."""
    with database.transaction() as session, metrics.CLAIM_DURATION.time():
        return work_claims.claim_within_budget(session, policy, max_in_flight=max_in_flight)


CLAIM_SHARE: Final = 4
"""The control worker claims once at least 1/``CLAIM_SHARE`` of the in-flight budget is free."""


def claim_share(
    database: Database, policy: values.QueuePolicy, *, max_in_flight: int
) -> work_claims.Batch:
    """What ``occ.claim`` runs: a batch once a quarter of the budget is free, and whether a
    backlog remains (then the control worker claims again soon)."""
    min_room = max(max_in_flight // CLAIM_SHARE, 1)
    with database.transaction() as session, metrics.CLAIM_DURATION.time():
        return work_claims.claim_share(
            session, policy, max_in_flight=max_in_flight, min_room=min_room
        )


def owner_names(database: Database, claims: list[values.Claim]) -> dict[str, str]:
    """The names of the claims' Namespaces and Agents by id, for their tasks' descriptions;
    empty when they cannot be read (a description never holds a dispatch back)."""
    if not claims:
        return {}
    try:
        with database.snapshot() as session:
            return work_reads.owner_names(session, [claim.owner for claim in claims])
    except Exception as exc:  # the claims stand; their tasks show ids only
        observability.log(
            "worker.names-unavailable", level=logging.WARNING, error=type(exc).__name__
        )
        return {}


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
            registry.HANDLERS[item.kind].on_failed(session, item, {})
    metrics.RECOVERED.labels("requeued").inc(len(report.requeued))
    metrics.RECOVERED.labels("failed").inc(len(report.failed) + len(report.exhausted))
    return report


def observe(worker: Worker) -> observer.Tick:
    """Beat's observation tick: ``observer.tick``."""
    return observer.tick(worker)


def prune(worker: Worker) -> upkeep.PruneReport:
    """Beat's prune: ``upkeep.prune`` with the worker's retention settings."""
    return upkeep.prune(worker.database, upkeep.Retention.of(worker.settings))


UNREADABLE_DEFERRAL_MS: Final = 5_000
"""How long an item a worker could not read waits before it is claimed again (for a newer
worker, during a rolling upgrade)."""


def defer_unreadable(worker: Worker, work_id: str, dispatch_token: str, *, version: int) -> bool:
    """Give back a dispatch this release cannot read (a newer payload ``version`` or work kind):
    queued again after ``UNREADABLE_DEFERRAL_MS``, the attempt refunded, logged
    ``worker.deferred``; ``False`` when the token was not live (nothing changed)."""
    try:
        token = uuid.UUID(dispatch_token)
    except (ValueError, TypeError, AttributeError):
        return False
    code = codes.Code.WORK_VERSION_UNSUPPORTED
    try:
        with worker.database.autocommit_connection() as connection:  # one statement
            deferred = work_queue.defer_dispatch(
                connection, work_id, token, code=code, delay_ms=UNREADABLE_DEFERRAL_MS
            )
    except errors.DependencyUnavailable as exc:
        _log_unavailable(exc, workId=work_id)
        return False
    if deferred:
        observability.log(
            "worker.deferred",
            level=logging.WARNING,
            code=code,
            workId=work_id,
            version=version,
            delayMs=UNREADABLE_DEFERRAL_MS,
        )
    return deferred


def _log_unavailable(exc: errors.DependencyUnavailable, **fields: Any) -> None:
    """``worker.error``: a dependency (the database, the broker) was unavailable mid-item."""
    observability.log(
        "worker.error",
        level=logging.ERROR,
        code=codes.Code.WORKER_UNAVAILABLE,
        error=exc.code,
        **fields,
    )


def run(
    worker: Worker, work_id: str, dispatch_token: str, *, version: int = 1
) -> outcome.PassResult | None:
    """Run one dispatched item; ``None`` when the message was stale (nothing happened) or one
    this release cannot read (deferred for a newer worker)."""
    started_at = time.perf_counter()
    handler = _handler(work_id)
    try:
        token = uuid.UUID(dispatch_token)
    except ValueError:
        return None
    if handler is None:  # a kind this release does not know (or no work id at all)
        defer_unreadable(worker, work_id, dispatch_token, version=version)
        return None
    granted_at = time.monotonic()  # the start grants its lease at or after this moment
    started = handler.start(worker, work_id, token)
    if started is None:
        return None
    claim = started.claim
    context = ClaimContext(
        worker.database,
        worker.policy,
        claim,
        shutdown=worker.shutdown,
        on_failed=handler.on_failed,
        granted_at=granted_at,
        renewals=worker.renewals,
        on_database_clock=clock_skew.PROCESS.record,
    )
    fields = _log_fields(handler, claim)
    with context, pass_report.recording() as report:
        try:
            result = handler.reconcile(worker, context, started.loaded)
        except (base.Aborted, errors.ClaimLost):
            return _stopped(worker, context, fields)
        except errors.DependencyUnavailable as exc:
            _log_unavailable(exc, **fields)
            return None
        except (SystemExit, KeyboardInterrupt):
            # the worker is being torn down (e.g. the end of a soft shutdown): give the claim back
            _release(worker, context)
            raise
        except Exception as exc:  # a bug in a reconciler or a driver: loud, and retried
            metrics.RECONCILER_ERRORS.labels(handler.metric_label).inc()
            observability.log(
                "worker.error",
                level=logging.ERROR,
                code=codes.Code.RECONCILER_ERROR,
                error=type(exc).__name__,
                exc_info=exc,
                **fields,
            )
            retried = _retry_after_error(worker, context)
            if retried is None:
                return None
            result = retried
    _measure(handler, claim, result, time.perf_counter() - started_at)
    observability.log(
        "worker.completed",
        outcome=str(result.outcome),
        code=result.code,
        durationMs=round((time.perf_counter() - started_at) * 1000, 1),
        **fields,
        **_outcome_fields(worker, handler, claim, result, report),
    )
    return result


def _outcome_fields(
    worker: Worker,
    handler: kinds.Handler[Any],
    claim: values.Claim,
    result: outcome.PassResult,
    report: pass_report.PassReport,
) -> dict[str, Any]:
    """What ``worker.completed`` adds to the pass's identity: a deployment's timing (its
    deploy work only) and the startup warnings its success carries, and, for a pass that did
    not succeed, its cause."""
    fields: dict[str, Any] = {}
    if handler.deploy_timing:
        fields.update(report.timing_fields())
        if result.outcome == codes.Outcome.SUCCESS:
            fields["warnings"] = [dict(warning) for warning in report.warnings]
        try:
            with worker.database.snapshot() as session:
                progress = work_reads.deploy_progress(session, claim.work_id)
        except errors.DependencyUnavailable:
            progress = None
        if progress is not None:
            fields.update(
                deployPasses=progress.passes,
                elapsedMs=progress.elapsed_ms,
                readinessWaitMs=progress.readiness_wait_ms,
            )
    if result.outcome != codes.Outcome.SUCCESS:
        fields.update({"cause": result.code, **report.cause_fields()})
    return fields


def _handler(work_id: str) -> kinds.Handler[Any] | None:
    """The handler of the kind a work id names (``None`` for a malformed id)."""
    try:
        return registry.HANDLERS[WorkKey.parse(work_id).kind]
    except ValueError:
        return None


def _stopped(
    worker: Worker, context: ClaimContext, fields: dict[str, Any]
) -> outcome.PassResult | None:
    context.watch_once()  # a driver that saw the lease run out first: say so
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
    if context.stop_code is not None:
        fields = {**fields, "cause": context.stop_code}
    observability.log("worker.error", level=logging.WARNING, code=codes.Code.CLAIM_LOST, **fields)
    return None


def _release(worker: Worker, context: ClaimContext) -> None:
    try:
        with worker.database.autocommit_connection() as connection:  # one statement
            work_queue.release(connection, context.claim)
    except errors.OccError:
        return


def _retry_after_error(worker: Worker, context: ClaimContext) -> outcome.PassResult | None:
    try:
        with worker.database.transaction() as session:
            return settle.retry(session, worker.policy, context, codes.Code.RECONCILER_ERROR)
    except errors.OccError:
        return None


def _measure(
    handler: kinds.Handler[Any], claim: values.Claim, result: outcome.PassResult, seconds: float
) -> None:
    kind = handler.metric_label
    metrics.RECONCILIATION_ATTEMPTS.labels(kind, str(result.outcome)).inc()
    metrics.RECONCILIATION_DURATION.labels(kind).observe(seconds)
    ends = handler.ends
    if ends is not None and result.code in ends.codes:
        # admission was stamped on the database clock: read now on it too (this host's clock
        # less its measured skew), so a skewed worker does not stretch or shrink the figure
        skew = dt.timedelta(seconds=clock_skew.PROCESS.skew_s or 0.0)
        since_admission = dt.datetime.now(dt.UTC) - skew - claim.created_at
        metrics.AGENT_OPERATION_DURATION.labels(ends.name).observe(
            max(since_admission.total_seconds(), 0.0)
        )


def _log_fields(handler: kinds.Handler[Any], claim: values.Claim) -> dict[str, Any]:
    owner = claim.owner
    return {
        "workId": claim.work_id,
        "attempt": claim.attempt_count,
        "operation": handler.operation,
        "namespaceId": owner.namespace_id,
        "agentId": owner.agent_id,
        "revisionId": owner.revision_id,
    }
