"""An in-memory ``RevisionStore`` for unit tests of the revision pass, built from a scenario.

``InMemoryRevisionStore`` answers the pass's reads and publications from a
``scenarios.Scenario`` the way the PostgreSQL store does: a claim-fenced compare-and-set of
the active pointer, one activation audit, the queue's settlement rules (defer refunds the
attempt and fails past the convergence deadline on an injected clock; retry keeps it and fails
at the attempt limit). It keeps what was published so tests
assert the outcome. It must not grow logic the pass itself should have: everything here
mirrors ``occ.reconcile.revision_store`` and ``occ.state.work_queue``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import outcome, revision_snapshot, revision_store, startup_warnings
from occ.state import agents, revisions, runtime_observations, values, work_keys
from tests.support import claim_guard, scenarios
from tests.support import clock as clocks

Code = codes.Code
AgentChange = Callable[[agents.Agent], agents.Agent]


@dataclass(frozen=True)
class WorkRow:
    """The work item as the queue would hold it."""

    key: work_keys.WorkKey
    state: values.WorkState
    attempt_count: int
    created_ms: float
    reason_code: str | None = None
    result_data: Mapping[str, Any] | None = None
    last_progress_code: str | None = None
    available_in_ms: int | None = None


@dataclass(frozen=True)
class Audit:
    action: str
    resource_id: str
    details: Mapping[str, Any]


@dataclass(frozen=True)
class Observed:
    """A runtime observation the store recorded for the Agent (``ready`` or ``degraded``)."""

    revision_id: str
    status: runtime_observations.RuntimeStatus
    reason_code: str


def stopped(agent: agents.Agent) -> agents.Agent:
    """A change made meanwhile: the Agent was stopped."""
    return dataclasses.replace(agent, desired_runtime_state=agents.DesiredRuntimeState.STOPPED)


def activated(revision_id: str) -> AgentChange:
    """A change made meanwhile: another pass made ``revision_id`` active."""
    return lambda agent: dataclasses.replace(agent, active_revision_id=revision_id)


class InMemoryRevisionStore:
    """``RevisionStore`` over a ``scenarios.Scenario`` (see the module).

    ``refusal`` makes ``load`` refuse with that code, settled by its outcome class the way the
    database store's checks settle. ``before(step, change)`` applies a change to the Agent just
    before the named store step, as another transaction would have meanwhile. Each pass settles
    the item once; ``next_pass`` hands a requeued item out again, like the next claim.
    ``journal``, a list shared with the other fakes, gets every step as ``("store.<step>",
    revision id)``.
    """

    def __init__(
        self,
        world: scenarios.Scenario,
        driver: base.ComputeDriver,
        guard: claim_guard.FakeClaimGuard,
        *,
        clock: clocks.ManualClock,
        policy: values.QueuePolicy | None = None,
        refusal: Code | None = None,
        retiring: bool = False,
        journal: list[tuple[str, str]] | None = None,
    ) -> None:
        self.world = world
        self.agent = world.agent
        self.guard = guard
        self.steps: list[str] = []
        """The store steps the passes took, oldest first."""
        self._journal = journal
        self.row = WorkRow(world.key, values.WorkState.CLAIMED, 1, clock.now_ms)
        self.results: list[outcome.PassResult] = []
        self.warnings: startup_warnings.Judged = ()
        """The startup warnings the last published activation carried."""
        self.audits: list[Audit] = []
        self.observed: list[Observed] = []
        self._driver = driver
        self._clock = clock
        self._policy = policy or values.QueuePolicy()
        self._refusal = refusal
        self._retiring = retiring
        self._changes: dict[str, list[AgentChange]] = {}
        self._admitted = set(world.admitted)
        self.retired: set[str] = set()
        """The revisions whose retirement a pass published (a test may seed it)."""

    # -- test controls ------------------------------------------------------------------------

    def before(self, step: str, change: AgentChange) -> None:
        """Apply ``change`` to the Agent right before the store's next ``step``."""
        if not callable(getattr(revision_store.RevisionStore, step, None)):
            raise ValueError(f"{step!r} is not a RevisionStore step")
        self._changes.setdefault(step, []).append(change)

    def admit(self, number: int) -> None:
        """Another request admitted a deploy of revision ``number`` now (its deployment is
        under way until the test says otherwise)."""
        self._admitted.add(self.world.numbered(number).id)

    def next_pass(self, guard: claim_guard.FakeClaimGuard | None = None) -> None:
        """Claim the requeued item again (one more attempt), under ``guard`` if given."""
        if self.row.state != values.WorkState.QUEUED:
            raise AssertionError(f"the item is {self.row.state}, not queued: no next pass")
        self.row = dataclasses.replace(
            self.row, state=values.WorkState.CLAIMED, attempt_count=self.row.attempt_count + 1
        )
        self.guard = guard or claim_guard.FakeClaimGuard(self.guard.work_id)

    @property
    def result(self) -> outcome.PassResult | None:
        """How the current pass settled the item (``None`` while it has not)."""
        return self.results[-1] if self.row.state != values.WorkState.CLAIMED else None

    # -- the protocol -------------------------------------------------------------------------

    def load(self) -> revision_snapshot.Snapshot | outcome.PassResult:
        self._begin("load")
        if self._refusal is not None:
            return self._settle_by_class(self._refusal)
        revision = self.world.revision
        if self._retiring:
            # the revision's deployment failed for good: no checks, no credential
            return revision_snapshot.snapshot(
                self.agent,
                revision,
                self.world.revisions,
                driver_name=self._driver.name,
                credential=None,
                successor_id=None,
                retire=True,
            )
        return revision_snapshot.snapshot(
            self.agent,
            revision,
            self.world.revisions,
            driver_name=self._driver.name,
            credential=self.world.credential,
            successor_id=self._successor(revision.revision_number),
            age_ms=int(self._clock.now_ms - self.row.created_ms),
            retired=self.retired,
        )

    def refresh(self, snapshot: revision_snapshot.Snapshot) -> revision_snapshot.Snapshot:
        self._begin("refresh")
        return dataclasses.replace(
            snapshot,
            agent=self.agent,
            successor_id=self._successor(snapshot.revision.revision_number),
        )

    def move_pointer(
        self, snapshot: revision_snapshot.Snapshot
    ) -> revision_store.Moved | outcome.PassResult:
        self._begin("move_pointer")
        if self.agent.desired_runtime_state != "running":
            return "stopped"
        if self.agent.active_revision_id != snapshot.agent.active_revision_id:
            return self.retry(Code.ACTIVE_REVISION_CHANGED, begun=True)
        self.agent = dataclasses.replace(self.agent, active_revision_id=snapshot.revision.id)
        return "moved"

    def publish_activation(
        self,
        snapshot: revision_snapshot.Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revisions.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult:
        self._begin("publish_activation")
        revision = snapshot.revision
        if self.agent.active_revision_id != revision.id:
            return self.retry(Code.ACTIVE_REVISION_CHANGED, begun=True)
        self.agent = dataclasses.replace(self.agent, endpoint=activation.endpoint)
        self.retired.update(r.id for r in retired)
        self.observed.append(Observed(revision.id, runtime_observations.RuntimeStatus.READY, code))
        if not any(
            a.action == revision_store.ACTIVATE_ACTION and a.resource_id == revision.id
            for a in self.audits
        ):
            previous = snapshot.active.id if snapshot.active else None
            self.audits.append(
                Audit(
                    revision_store.ACTIVATE_ACTION,
                    revision.id,
                    {
                        "reasonCode": code,
                        "previousRevisionId": previous if previous != revision.id else None,
                    },
                )
            )
        self.warnings = warnings
        return self.complete(code, begun=True)

    def degrade(
        self, snapshot: revision_snapshot.Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult:
        self._begin("degrade")
        revision = snapshot.revision
        if self.agent.active_revision_id != revision.id:
            return self.complete(Code.REVISION_MAINTENANCE_SUPERSEDED, begun=True)
        self.observed.append(
            Observed(revision.id, runtime_observations.RuntimeStatus.DEGRADED, reason_code)
        )
        if recheck_ms is None:
            return self.complete(Code.REVISION_DEGRADED, begun=True)
        return self.defer(Code.REVISION_INCOMPLETE, delay_ms=recheck_ms, begun=True)

    def complete(self, code: Code, *, begun: bool = False) -> outcome.PassResult:
        self._begin("complete", begun=begun)
        codes.require(code, codes.Outcome.SUCCESS)
        return self._finish(values.WorkState.SUCCEEDED, code, outcome.success(code))

    def publish_retirement(self, snapshot: revision_snapshot.Snapshot) -> outcome.PassResult:
        self._begin("publish_retirement")
        self.audits.append(
            Audit(
                revision_store.RETIRE_ACTION,
                snapshot.revision.id,
                {"reasonCode": Code.REVISION_RETIRED},
            )
        )
        return self.complete(Code.REVISION_RETIRED, begun=True)

    def supersede(self, snapshot: revision_snapshot.Snapshot) -> outcome.PassResult:
        self._begin("supersede")
        active_id = snapshot.active.id if snapshot.active else None
        self.audits.append(
            Audit(
                "agents.lifecycle.supersede",
                snapshot.revision.id,
                {"activeRevisionId": active_id, "reasonCode": Code.REVISION_SUPERSEDED},
            )
        )
        return self.complete(Code.REVISION_SUPERSEDED, begun=True)

    def defer(self, code: Code, *, delay_ms: int | None, begun: bool = False) -> outcome.PassResult:
        self._begin("defer", begun=begun)
        codes.require(code, codes.Outcome.PENDING)
        timeout_ms = self._policy.convergence_timeout_ms
        if self.row.created_ms + timeout_ms <= self._clock.now_ms:
            deadline = Code.CONVERGENCE_DEADLINE_EXCEEDED
            self.row = dataclasses.replace(self.row, result_data={"timeoutMs": timeout_ms})
            return self._finish(
                values.WorkState.FAILED_PERMANENT, deadline, outcome.permanent(deadline)
            )
        due_in = delay_ms if delay_ms is not None else _backoff_ms(self.row.attempt_count)
        self.row = dataclasses.replace(
            self.row,
            state=values.WorkState.QUEUED,
            attempt_count=max(self.row.attempt_count - 1, 0),
            last_progress_code=code,
            available_in_ms=due_in,
        )
        return self._record(outcome.PassResult(codes.Outcome.PENDING, code, due_in))

    def fail(self, code: Code, *, begun: bool = False) -> outcome.PassResult:
        self._begin("fail", begun=begun)
        codes.require(code)
        return self._finish(values.WorkState.FAILED_PERMANENT, code, outcome.permanent(code))

    def retry(self, code: Code, *, begun: bool = False) -> outcome.PassResult:
        self._begin("retry", begun=begun)
        codes.require(code, codes.Outcome.RETRY)
        if self.row.attempt_count >= self._policy.max_attempts:
            return self._finish(values.WorkState.FAILED_PERMANENT, code, outcome.permanent(code))
        due_in = _backoff_ms(self.row.attempt_count)
        self.row = dataclasses.replace(
            self.row, state=values.WorkState.QUEUED, last_progress_code=code, available_in_ms=due_in
        )
        return self._record(outcome.PassResult(codes.Outcome.RETRY, code, due_in))

    # -- helpers ------------------------------------------------------------------------------

    def _begin(self, step: str, *, begun: bool = False) -> None:
        """Start a fenced transaction: journal it, fence it, apply what changed meanwhile."""
        if begun:
            return  # a settlement inside a step that already began its transaction
        self.steps.append(step)
        if self._journal is not None:
            self._journal.append((f"store.{step}", self.world.revision_id))
        self.guard.fence()
        if self.row.state != values.WorkState.CLAIMED:
            raise AssertionError(f"{step} after the pass settled the item ({self.row.state})")
        for change in self._changes.pop(step, []):
            self.agent = change(self.agent)

    def _successor(self, number: int) -> str | None:
        newer = [
            r for r in self.world.revisions if r.id in self._admitted and r.revision_number > number
        ]
        return max(newer, key=lambda r: r.revision_number).id if newer else None

    def _settle_by_class(self, code: Code) -> outcome.PassResult:
        match code.outcome:
            case codes.Outcome.SUCCESS:
                return self.complete(code, begun=True)
            case codes.Outcome.RETRY:
                return self.retry(code, begun=True)
            case codes.Outcome.PENDING:
                return self.defer(code, delay_ms=None, begun=True)
            case codes.Outcome.PERMANENT:
                return self.fail(code, begun=True)

    def _finish(
        self, state: values.WorkState, code: str, result: outcome.PassResult
    ) -> outcome.PassResult:
        self.row = dataclasses.replace(self.row, state=state, reason_code=code)
        return self._record(result)

    def _record(self, result: outcome.PassResult) -> outcome.PassResult:
        self.results.append(result)
        return result


def _backoff_ms(attempt_count: int) -> int:
    """The queue's backoff at its upper bound (the database adds jitter below it)."""
    exponent = min(max(attempt_count - 1, 0), 30)
    return int(min(300_000, 1000 * 2**exponent))
