"""AgentRevision work: deploy (prepare, activate, retire predecessors) and maintenance.

One pass: the store's consistent read and checks (owners, Namespace ready, service principal,
pinned harness and driver, re-authorization of the original actor and the service principal,
then the credential); supersession and stop checks without Compute; stopped predecessors when
the revision needs them; preparation; activation in the driver's ``activation_order`` around
the claim-fenced compare-and-set of the active pointer; retirement of earlier revisions; then
the publication that appends the activation audit and completes the item, its result the
startup warnings the runtime reported (``startup_warnings``: judged from preparation's
``Ready`` before activation, or from the ``Activation`` of a driver whose runtime starts only
then; maintenance records none).
Every Compute call runs under a freshly renewed claim; a pass that loses its claim anywhere
publishes nothing; a
pass that finds its revision already active (a recovered or maintenance pass) resumes at
activation.

``run_pass`` holds the logic and talks to two ports, the driver and a ``RevisionStore``, so
every branch is unit-tested with a fake driver and an in-memory store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import (
    environment,
    kinds,
    outcome,
    pass_report,
    retirement,
    specs,
    startup_warnings,
)
from occ.reconcile.context import ClaimContext, ClaimGuard
from occ.reconcile.revision_snapshot import Snapshot
from occ.reconcile.revision_store import DatabaseRevisionStore, RevisionStore
from occ.state import agents, revisions
from occ.state.work_keys import WorkKind

T = TypeVar("T")
Code = codes.Code


def deploy(worker: environment.Worker, context: ClaimContext, loaded: None) -> outcome.PassResult:
    """One pass over a ``REVISION_RECONCILE`` item (the revision's deployment)."""
    return _run(worker, context, maintenance=False)


def maintain(worker: environment.Worker, context: ClaimContext, loaded: None) -> outcome.PassResult:
    """One pass over a ``REVISION_MAINTENANCE`` item (an observation of the active revision)."""
    return _run(worker, context, maintenance=True)


def _run(
    worker: environment.Worker, context: ClaimContext, *, maintenance: bool
) -> outcome.PassResult:
    return run_pass(
        DatabaseRevisionStore(worker, context, maintenance=maintenance),
        worker.driver,
        context,
        maintenance=maintenance,
        unready_recheck_ms=worker.settings.unready_recheck_ms,
    )


def run_pass(
    store: RevisionStore,
    driver: base.ComputeDriver,
    guard: ClaimGuard,
    *,
    maintenance: bool,
    unready_recheck_ms: int,
) -> outcome.PassResult:
    """The pass over one revision, through its store and driver (see the module)."""
    loaded = store.load()
    if isinstance(loaded, outcome.PassResult):
        return loaded
    snapshot, spec = loaded, loaded.spec
    if snapshot.retire:
        return _retire(store, driver, guard, snapshot)
    capabilities = driver.revision_capabilities(spec)
    if snapshot.agent.desired_runtime_state != agents.DesiredRuntimeState.RUNNING:
        return _stopped_agent(store, driver, guard, snapshot, maintenance=maintenance)
    if maintenance:
        return _maintain(store, driver, guard, snapshot, unready_recheck_ms)
    if snapshot.superseded:
        return store.supersede(snapshot)
    if capabilities.requires_stopped_predecessors:
        stopped = _attempt(store, lambda: _each(guard, driver.stop_revision, snapshot.earlier))
        if stopped is not None:
            return stopped

    observation = _prepare(driver, guard, spec)
    if isinstance(observation, base.Pending):
        return store.defer(
            Code.REVISION_INCOMPLETE, delay_ms=_recheck_ms(observation, unready_recheck_ms)
        )
    if isinstance(observation, base.Failed):
        return _failed(store, observation)
    if not isinstance(observation, base.Ready):
        return store.fail(Code.INVALID_DRIVER_OBSERVATION)
    warnings = startup_warnings.judged(observation.warnings)
    if warnings is None:
        return store.fail(Code.INVALID_DRIVER_OBSERVATION)

    already_active = snapshot.agent.active_revision_id == spec.revision_id
    if not already_active:
        if capabilities.activation_order == base.ActivationOrder.BEFORE_COMMIT:
            early = _activate(driver, guard, spec)
            if not isinstance(early, base.Activation):
                return _unfinished(store, early, unready_recheck_ms)
        moved = store.move_pointer(snapshot)
        if moved == "stopped":
            return _stopped_agent(store, driver, guard, snapshot, maintenance=False)
        if isinstance(moved, outcome.PassResult):
            return moved
    # from here on the pointer names this revision: an unfinished step defers, and the next
    # pass finds the revision active and resumes here
    activation = _activate(driver, guard, spec)
    if not isinstance(activation, base.Activation):
        return _unfinished(store, activation, unready_recheck_ms)
    if activation.warnings is not None:  # a runtime that starts at activation reports here
        warnings = startup_warnings.judged(activation.warnings)
        if warnings is None:
            return store.fail(Code.INVALID_DRIVER_OBSERVATION)
    try:
        _each(guard, driver.retire_revision, snapshot.earlier)
    except (base.TransientDriverError, base.PermanentDriverError):
        return store.defer(Code.REVISION_FINALIZATION_INCOMPLETE, delay_ms=None)
    code = Code.REVISION_ALREADY_ACTIVE if already_active else Code.REVISION_ACTIVATED
    return store.publish_activation(
        snapshot, activation, code, retired=snapshot.earlier, warnings=warnings
    )


def _maintain(
    store: RevisionStore,
    driver: base.ComputeDriver,
    guard: ClaimGuard,
    snapshot: Snapshot,
    unready_recheck_ms: int,
) -> outcome.PassResult:
    """A repair the fleet observer admitted: observe the active revision and repair what is
    gone (prepare starts or re-applies it, activation re-reads its endpoint); an unhealthy
    runtime is recorded ``degraded`` and looked at again, never retired. Before each effect
    the pass reads the Agent again under its claim: a revision that is no longer the active
    one, or one a newer deploy was admitted over, ends the repair with no further effect (the
    newer pass may be stopping it). A revision whose capabilities require stopped
    predecessors gets them stopped first, as its deploy did, so the repair neither runs it
    beside an earlier one nor publishes it before they are stopped."""
    snapshot = store.refresh(snapshot)
    if snapshot.maintenance_superseded:
        return store.complete(Code.REVISION_MAINTENANCE_SUPERSEDED)
    if driver.revision_capabilities(snapshot.spec).requires_stopped_predecessors:
        stopped = _attempt(store, lambda: _each(guard, driver.stop_revision, snapshot.earlier))
        if stopped is not None:
            return stopped
        snapshot = store.refresh(snapshot)
        if snapshot.maintenance_superseded:
            return store.complete(Code.REVISION_MAINTENANCE_SUPERSEDED)
    observation = _prepare(driver, guard, snapshot.spec)
    if isinstance(observation, base.Ready):
        snapshot = store.refresh(snapshot)
        if snapshot.maintenance_superseded:
            return store.complete(Code.REVISION_MAINTENANCE_SUPERSEDED)
        activation = _activate(driver, guard, snapshot.spec)
        if isinstance(activation, base.Activation):
            return store.publish_activation(snapshot, activation, Code.REVISION_ALREADY_ACTIVE)
        step: base.Pending | base.Failed = activation
    elif isinstance(observation, base.Pending | base.Failed):
        step = observation
    else:
        return store.degrade(snapshot, Code.INVALID_DRIVER_OBSERVATION, recheck_ms=None)
    if isinstance(step, base.Pending):
        # a runtime on its way back: the driver's code, else plainly "not ready yet"
        reason = step.reason if codes.is_code_shaped(step.reason) else Code.REVISION_INCOMPLETE
        interval_s = driver.revision_capabilities(snapshot.spec).maintenance_interval_s
        recheck = _repair_recheck_ms(step, snapshot.age_ms, interval_s, unready_recheck_ms)
        return store.degrade(snapshot, reason, recheck_ms=recheck)
    return store.degrade(snapshot, step.code, recheck_ms=None)


def _retire(
    store: RevisionStore, driver: base.ComputeDriver, guard: ClaimGuard, snapshot: Snapshot
) -> outcome.PassResult:
    """The revision's deployment failed for good: retire its runtime and credential (the
    driver's ``retire_revision``), audited, unless the Agent runs it as its active revision
    after all (the failure moved the pointer back off it, so nothing else should)."""
    snapshot = store.refresh(snapshot)
    if snapshot.agent.active_revision_id == snapshot.revision.id:
        return store.complete(Code.REVISION_MAINTENANCE_SUPERSEDED)
    spec = snapshot.spec
    failed = _attempt(
        store, lambda: _effect(guard, lambda: driver.retire_revision(guard.operation(), spec))
    )
    if failed is not None:
        return failed
    return store.publish_retirement(snapshot)


def _repair_recheck_ms(
    pending: base.Pending, age_ms: int, interval_s: float | None, unready_recheck_ms: int
) -> int | None:
    """How soon a repair looks again at a runtime on its way back: after the repair's own age
    (so the checks space out, doubling from the usual recheck) while it is younger than one
    observation interval; after that, ``None``: the fleet observer looks again."""
    if not interval_s or age_ms >= interval_s * 1000:
        return None
    return max(_recheck_ms(pending, unready_recheck_ms), age_ms)


def _prepare(
    driver: base.ComputeDriver, guard: ClaimGuard, spec: base.RevisionSpec
) -> base.Observation:
    """Prepare under a renewed claim; a transient driver error counts as not ready yet."""
    try:
        with pass_report.phase("prepare"):
            observation = _effect(guard, lambda: driver.prepare_revision(guard.operation(), spec))
    except base.TransientDriverError as exc:
        pass_report.driver_answer(exc.code, exc)
        return base.Pending(exc.code, exc.retry_after_s)
    except base.PermanentDriverError as exc:
        pass_report.driver_answer(exc.code, exc)
        return base.Failed(exc.code, permanent=True, reason=exc.reason)
    _note(observation)
    return observation


def _recheck_ms(pending: base.Pending, unready_recheck_ms: int) -> int:
    """How long a not-ready revision waits: the usual recheck, or longer when asked to."""
    if pending.retry_after_s is None:
        return unready_recheck_ms
    return max(unready_recheck_ms, int(pending.retry_after_s * 1000))


def _activate(
    driver: base.ComputeDriver, guard: ClaimGuard, spec: base.RevisionSpec
) -> base.Activation | base.Pending | base.Failed:
    """Activate under a renewed claim: the endpoint, not ready yet, or a failure."""
    try:
        with pass_report.phase("activation"):
            answer = _effect(guard, lambda: driver.activate_revision(guard.operation(), spec))
    except base.TransientDriverError as exc:
        pass_report.driver_answer(exc.code, exc)
        if exc.retry_after_s is not None:
            return base.Pending(exc.code, exc.retry_after_s)
        return base.Failed(exc.code, permanent=False, reason=exc.reason)
    except base.PermanentDriverError as exc:
        pass_report.driver_answer(exc.code, exc)
        return base.Failed(exc.code, permanent=True, reason=exc.reason)
    if isinstance(answer, base.Activation | base.Pending | base.Failed):
        _note(answer)
        return answer
    return base.Failed(Code.INVALID_DRIVER_OBSERVATION, permanent=True)


def _note(answer: object) -> None:
    """A driver's observation that keeps the pass from finishing is its cause: a failure's
    code, or what a not-ready runtime waits for (when the driver says it as a code)."""
    if isinstance(answer, base.Failed):
        pass_report.driver_answer(answer.code)
    elif isinstance(answer, base.Pending):
        waits_for = answer.code or (answer.reason if codes.is_code_shaped(answer.reason) else None)
        pass_report.driver_answer(waits_for)


def _unfinished(
    store: RevisionStore, step: base.Pending | base.Failed, unready_recheck_ms: int
) -> outcome.PassResult:
    """An activation that is not done: wait for the rollout, or retry a transient failure
    without spending an attempt; a permanent one fails the item with the driver's code."""
    if isinstance(step, base.Failed) and step.permanent:
        return store.fail(_registered(step.code))
    if isinstance(step, base.Pending):
        return store.defer(Code.REVISION_INCOMPLETE, delay_ms=_recheck_ms(step, unready_recheck_ms))
    return store.defer(Code.REVISION_FINALIZATION_INCOMPLETE, delay_ms=None)


def _failed(store: RevisionStore, observation: base.Failed) -> outcome.PassResult:
    if observation.permanent:
        return store.fail(_registered(observation.code))
    return store.retry(Code.DEPENDENCY_UNAVAILABLE)


def _registered(code: str) -> Code:
    """The driver's code when occ registered it, else the generic start-up failure."""
    return codes.lookup(code) or Code.RUNTIME_STARTUP_FAILED


def _stopped_agent(
    store: RevisionStore,
    driver: base.ComputeDriver,
    guard: ClaimGuard,
    snapshot: Snapshot,
    *,
    maintenance: bool,
) -> outcome.PassResult:
    """The Agent was stopped meanwhile: stop this revision (and leftovers) and say so."""
    stop_spec = specs.revision(snapshot.revision)

    def stop() -> None:
        _effect(guard, lambda: driver.stop_revision(guard.operation(), stop_spec))
        if snapshot.agent.active_revision_id in (None, snapshot.revision.id):
            _each(guard, driver.retire_revision, snapshot.earlier)

    failed = _attempt(store, stop)
    if failed is not None:
        return failed
    return store.complete(
        Code.REVISION_MAINTENANCE_SUPERSEDED if maintenance else Code.REVISION_STOPPED
    )


def _attempt(store: RevisionStore, effects: Callable[[], None]) -> outcome.PassResult | None:
    """Run effects whose result is only "done": a driver error ends the pass as a retry (or,
    when retrying cannot help, a failure with the driver's code); ``None`` when they ran."""
    try:
        effects()
    except base.TransientDriverError:
        return store.retry(Code.DEPENDENCY_UNAVAILABLE)
    except base.PermanentDriverError as exc:
        return store.fail(_registered(exc.code))
    return None


def _effect(guard: ClaimGuard, call: Callable[[], T]) -> T:
    """A Compute call under a freshly renewed claim."""
    guard.renew_now()
    return call()


def _each(
    guard: ClaimGuard,
    operation: Callable[[base.Operation, base.RevisionSpec], None],
    revisions: Iterable[revisions.Revision],
) -> None:
    """One Compute call per revision, each under a freshly renewed claim (no credential)."""
    for revision in revisions:
        guard.renew_now()
        operation(guard.operation(), specs.revision(revision))


DEPLOYMENT = kinds.Handler(
    kind=WorkKind.REVISION_RECONCILE,
    start=kinds.start_claim,
    reconcile=deploy,
    operation="agent_revision.reconcile",
    on_failed=retirement.deployment_failed,
    ends=kinds.AgentOperation(
        "deploy", frozenset({Code.REVISION_ACTIVATED, Code.REVISION_ALREADY_ACTIVE})
    ),
    deploy_timing=True,
)
MAINTENANCE = kinds.Handler(
    kind=WorkKind.REVISION_MAINTENANCE,
    start=kinds.start_claim,
    reconcile=maintain,
    operation="agent_revision.maintenance",
)
