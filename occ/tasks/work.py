"""The Celery tasks of occ: ``occ.claim``, ``occ.recover_stale``, ``occ.run_work``,
``occ.observe_runtimes`` (the fleet observer's tick) and ``occ.prune`` (history past its
retention).

Task bodies are thin: they call ``occ.reconcile.executor`` with the ``executor.Worker`` of this
process's ``WorkerProcess`` and send the nudges and dispatches that follow. The periodic tasks
log ``worker.claimed``, ``worker.recovered``, ``worker.observed`` and ``worker.pruned`` with a
``count``: INFO when it is not zero, DEBUG when the tick found nothing. The process's life
cycle (start-up checks, readiness, shutdown) is ``occ.tasks.lifecycle``; nothing here touches
Celery's signals.
"""

from __future__ import annotations

import logging
from typing import Final

from celery import Celery

from occ.reconcile import executor
from occ.state import values
from occ.tasks import names, worker_process
from occ.telemetry import observability

SHORT_DEFERRAL_MS: Final = 30_000
"""A requeue due within this long sends its own delayed nudge (beat stays the backstop)."""

RECLAIM_S: Final = 0.05
"""While a backlog remains, ``occ.claim`` claims again after this long (a delayed nudge)."""


def register(app: Celery) -> worker_process.WorkerProcess:
    """Define occ's tasks on ``app``, with a new ``WorkerProcess`` attached to it."""
    process = worker_process.attach(app)

    def claim() -> int:
        worker = process.worker()
        batch = executor.claim_share(
            worker.database, worker.policy, max_in_flight=process.settings.max_in_flight
        )
        known = executor.owner_names(worker.database, batch.claims)
        unsent = []
        for item in batch.claims:
            try:
                app.send_task(
                    names.RUN_WORK,
                    args=[item.work_id, str(item.token)],
                    kwargs={"version": names.PAYLOAD_VERSION},
                    queue=names.DRIVER_QUEUE,
                    retry=False,
                    argsrepr=repr([item.work_id, "<dispatch token>"]),
                    kwargsrepr=_described(item, known),
                    # the broker's own TTL (RabbitMQ; relative, on the broker's clock), never
                    # Celery's ``expires``, which the receiving worker would judge on its clock
                    # against the sender's: the dispatch token's lease, on the database clock,
                    # is what expires a dispatch
                    expiration=worker.policy.dispatch_lease_ms / 1000,
                )
            except Exception as exc:  # the claim goes back to the queue
                observability.log(
                    "worker.error",
                    level=logging.ERROR,
                    code="WORKER_UNAVAILABLE",
                    error=type(exc).__name__,
                    workId=item.work_id,
                )
                unsent.append(item)
        if unsent:
            executor.release_dispatches(worker.database, unsent)
        elif batch.more:
            # a backlog remains: claim again once some of this batch has run, whoever nudges
            process.nudge(countdown_s=RECLAIM_S)
        sent = len(batch.claims) - len(unsent)
        observability.log("worker.claimed", level=_tick_level(sent), count=sent)
        return sent

    def recover_stale() -> int:
        worker = process.worker()
        report = executor.recover(worker.database, worker.policy)
        if report.requeued:
            process.nudge()
            later = report.next_available_in_ms
            if later and later <= SHORT_DEFERRAL_MS:
                process.nudge(countdown_s=later / 1000 + 0.05)
        recovered = report.recovered + len(report.exhausted)
        observability.log("worker.recovered", level=_tick_level(recovered), count=recovered)
        return recovered

    def observe_runtimes() -> int:
        report = executor.observe(process.worker())
        if report.repairs:
            process.nudge()
        if not report.caught_up:
            # more fell due than one tick takes: observe again now, whoever runs it
            app.send_task(names.OBSERVE_RUNTIMES, queue=names.CONTROL_QUEUE, retry=False)
        observability.log(
            "worker.observed",
            level=_tick_level(report.repairs),
            count=report.observed,
            repairs=report.repairs,
            lagS=round(report.lag_s, 3),
        )
        return report.observed

    def prune() -> int:
        report = executor.prune(process.worker())
        observability.log("worker.pruned", level=_tick_level(report.removed), count=report.removed)
        return report.removed

    def run_work(
        work_id: str, dispatch_token: str, version: int = 1, **newer: object
    ) -> str | None:
        if _deferred_if_newer(process, work_id, dispatch_token, version, newer):
            return None
        result = executor.run(process.worker(), work_id, dispatch_token, version=version)
        if result is None:
            return None
        if result.retry_in_ms is not None and 0 < result.retry_in_ms <= SHORT_DEFERRAL_MS:
            process.nudge(countdown_s=result.retry_in_ms / 1000)
        process.nudge_after_completion()
        return result.code

    # the periodic ticks send no task events: Flower's tasks page shows the work, not the clock
    app.task(name=names.CLAIM, ignore_result=True, send_events=False)(claim)
    app.task(name=names.RECOVER_STALE, ignore_result=True, send_events=False)(recover_stale)
    app.task(name=names.RUN_WORK, ignore_result=True)(run_work)
    app.task(name=names.OBSERVE_RUNTIMES, ignore_result=True, send_events=False)(observe_runtimes)
    app.task(name=names.PRUNE, ignore_result=True, send_events=False)(prune)
    return process


def _described(item: values.Claim, known: dict[str, str]) -> str:
    """What Flower shows of a work task's keyword arguments: its kind, and its Namespace and
    Agent by name (where ``known``) and id; never the token."""
    described = {"kind": str(item.kind)}
    for role, owner_id in (("namespace", item.owner.namespace_id), ("agent", item.owner.agent_id)):
        if owner_id is None:
            continue
        if owner_id in known:
            described[role] = known[owner_id]
        described[f"{role}Id"] = owner_id
    return repr(described)


def _deferred_if_newer(
    process: worker_process.WorkerProcess,
    work_id: str,
    dispatch_token: str,
    version: object,
    newer: dict[str, object],
) -> bool:
    """Defer a payload newer than this release (a newer version, or keywords it does not know)
    for a newer worker, never guessing at it; whether it was newer."""
    if isinstance(version, int) and version <= names.PAYLOAD_VERSION and not newer:
        return False
    shown = version if isinstance(version, int) else -1
    executor.defer_unreadable(process.worker(), work_id, dispatch_token, version=shown)
    return True


def _tick_level(found: int) -> int:
    """A periodic task's event is INFO when it found something, DEBUG when it found nothing."""
    return logging.INFO if found else logging.DEBUG
