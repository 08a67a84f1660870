"""One Agent's whole life in memory, for the property test of revision lifecycles: the real
revision pass (``revision.run_pass``), the real stop plan and stop and delete effects
(``agent_stop.plan_stop`` and ``stop_each``, ``agent_delete.retire_all``) and the fleet
observer's real decision table (``observer.judge`` on the driver's ``observe_revisions``) run
against a shared world of work items, an active pointer and a driver whose runtimes start and
stop.

``World`` holds what PostgreSQL would (the Agent, its admitted revisions, every work item, the
retired revisions) and what the Compute Driver would (which runtimes run). ``WorldStore``
answers one revision pass's reads and publications from it the way
``occ.reconcile.revision_store`` does, settling items the way ``occ.state.work_queue`` and the
deployment kind's terminal-failure effect (``occ.reconcile.retirement``) do. ``WorldDriver``
starts a runtime on prepare and records every effect with what the world looked like when it
happened, so a test can check what should never have happened. Nothing here touches a
database, a thread or the real clock.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import (
    agent_delete,
    agent_stop,
    observer,
    outcome,
    revision_snapshot,
    revision_store,
    specs,
    startup_warnings,
)
from occ.state import agents, observations, runtime_observations, values
from occ.state import revisions as revision_rows
from tests.support import claim_guard, clock, fake_driver, scenarios

Code = codes.Code
Status = runtime_observations.RuntimeStatus
Kind = Literal["deploy", "repair", "stop", "delete"]
LIVE: Final = ("queued", "claimed")
ACTIVATED: Final = (Code.REVISION_ACTIVATED, Code.REVISION_ALREADY_ACTIVE)
MAX_REVISIONS: Final = 6


@dataclass
class Item:
    """A work item as the queue holds it."""

    id: str
    kind: Kind
    revision_id: str | None
    created_s: float
    requested_at: dt.datetime | None = None
    state: str = "queued"
    reason: str | None = None
    attempts: int = 0


@dataclass(frozen=True)
class Effect:
    """A Compute call that went ahead, and whether its claim was lost at the time."""

    method: str
    revision_number: int
    claim_lost: bool


@dataclass
class World:
    """The Agent, its items and its runtimes (see the module)."""

    clock: clock.ManualClock
    policy: values.QueuePolicy
    dedicated: bool
    scenario: scenarios.Scenario = field(
        default_factory=lambda: scenarios.agent(
            revisions=MAX_REVISIONS, desired_runtime_state=agents.DesiredRuntimeState.STOPPED
        )
    )
    admitted: list[revision_rows.Revision] = field(default_factory=list)
    items: dict[str, Item] = field(default_factory=dict)
    retired: set[str] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    failing: set[str] = field(default_factory=set)
    """Revisions whose runtime starts but never becomes healthy (prepare fails for good)."""
    effects: list[Effect] = field(default_factory=list)
    older_started: list[tuple[int, int]] = field(default_factory=list)
    """(started, active) revision numbers: an older runtime started while a newer one was the
    active revision that succeeded."""
    repairs: int = 0
    sequence: int = 0
    deleting: bool = False
    lose_after: int | None = None
    """The Compute call of the current pass after which its claim is lost (its lease lapsed
    during the call); ``None``: kept."""

    def __post_init__(self) -> None:
        self.agent = self.scenario.agent

    # -- reads --------------------------------------------------------------------------------

    def number(self, revision_id: str) -> int:
        return next(r.revision_number for r in self.scenario.revisions if r.id == revision_id)

    def revision(self, revision_id: str) -> revision_rows.Revision:
        return next(r for r in self.admitted if r.id == revision_id)

    def deployment(self, revision_id: str) -> Item | None:
        return self.items.get(f"deploy:{revision_id}")

    def succeeded(self, revision_id: str) -> bool:
        item = self.deployment(revision_id)
        return item is not None and item.state == "succeeded" and item.reason in ACTIVATED

    def deployment_failed(self, revision_id: str) -> bool:
        item = self.deployment(revision_id)
        return item is not None and item.state == "failed"

    def newest_succeeded(self) -> revision_rows.Revision | None:
        done = [r for r in self.admitted if self.succeeded(r.id)]
        return max(done, key=lambda r: r.revision_number) if done else None

    def pending_successor(self, number: int) -> str | None:
        newer = [
            r
            for r in self.admitted
            if r.revision_number > number
            and (item := self.deployment(r.id)) is not None
            and item.state in LIVE
        ]
        return max(newer, key=lambda r: r.revision_number).id if newer else None

    def live(self, kind: Kind | None = None) -> list[Item]:
        return [
            item
            for item in self.items.values()
            if item.state in LIVE and (kind is None or item.kind == kind)
        ]

    # -- admissions ---------------------------------------------------------------------------

    def enqueue(self, kind: Kind, revision_id: str | None) -> Item:
        self.sequence += 1
        key = f"deploy:{revision_id}" if kind == "deploy" else f"{kind}:{self.sequence}"
        requested = None
        if kind == "stop":
            newest = self.admitted[-1].created_at if self.admitted else self.agent.created_at
            requested = newest + dt.timedelta(seconds=1)
        item = Item(key, kind, revision_id, self.clock.now_s, requested_at=requested)
        self.items[key] = item
        return item

    def deploy(self, *, fails: bool) -> revision_rows.Revision:
        """Admit the next revision: desired running, its deployment queued."""
        revision = self.scenario.revisions[len(self.admitted)]
        self.admitted.append(revision)
        if fails:
            self.failing.add(revision.id)
        self.agent = dataclasses.replace(
            self.agent, desired_runtime_state=agents.DesiredRuntimeState.RUNNING
        )
        self.enqueue("deploy", revision.id)
        return revision

    def stop(self) -> None:
        self.agent = dataclasses.replace(
            self.agent, desired_runtime_state=agents.DesiredRuntimeState.STOPPED
        )
        self.enqueue("stop", None)

    def delete(self) -> None:
        self.deleting = True
        self.agent = dataclasses.replace(
            self.agent, desired_runtime_state=agents.DesiredRuntimeState.STOPPED
        )
        self.enqueue("delete", None)

    def observe(self, driver: base.ComputeDriver) -> None:
        """One observation of the active revision through the real decision table
        (``observer.judge``) on what ``driver.observe_revisions`` reports; a ``REPAIR`` is
        admitted as ``maintenance.admit_repair`` does: one live repair at a time."""
        active = self.agent.active_revision_id
        if active is None or self.agent.desired_runtime_state != "running" or self.deleting:
            return
        revision = self.revision(active)
        seen = driver.observe_revisions([specs.revision(revision)])[active]
        due = observations.Due(
            revision=revision,
            phase=0,
            endpoint=self.agent.endpoint,
            observed=Status.READY if self.repairs == 0 else Status.DEGRADED,
            repairs=self.repairs,
            repair_after=None,
            deploying=self.pending_successor(revision.revision_number) is not None,
        )
        now = dt.datetime.fromtimestamp(self.clock.now_s, dt.UTC)
        verdict = observer.judge(due, seen, now)
        if verdict in (observer.Verdict.UNCHANGED, observer.Verdict.RECOVERED):
            self.repairs = 0
        elif verdict == observer.Verdict.REPAIR and not any(
            item.revision_id == active for item in self.live("repair")
        ):
            self.repairs += 1
            self.enqueue("repair", active)

    # -- settlement (the queue's rules and the deployment's failure effect) -------------------

    def settle(self, item: Item, state: str, reason: str) -> outcome.PassResult:
        code = codes.lookup(reason) or Code.RECONCILE_SUCCEEDED
        if state == "succeeded":
            item.state, item.reason = "succeeded", reason
            return outcome.success(code)
        item.state, item.reason = "failed", reason
        if item.kind == "deploy" and item.revision_id is not None:
            self._deployment_failed(item.revision_id)
        return outcome.permanent(code)

    def retry(self, item: Item, reason: str) -> outcome.PassResult:
        if item.attempts >= self.policy.max_attempts:
            return self.settle(item, "failed", reason)
        item.state = "queued"
        return outcome.PassResult(codes.Outcome.RETRY, reason, 0)

    def defer(self, item: Item, reason: str) -> outcome.PassResult:
        if item.created_s + self.policy.convergence_timeout_ms / 1000 <= self.clock.now_s:
            return self.settle(item, "failed", Code.CONVERGENCE_DEADLINE_EXCEEDED)
        item.state, item.attempts = "queued", max(item.attempts - 1, 0)
        return outcome.PassResult(codes.Outcome.PENDING, reason, 0)

    def recover(self, item: Item) -> None:
        """The lease of a lost claim lapsed: requeued keeping the attempt, failed at the
        limit (``LEASE_EXPIRED``)."""
        if item.state != "claimed":
            return
        if item.attempts >= self.policy.max_attempts:
            self.settle(item, "failed", Code.LEASE_EXPIRED)
        else:
            item.state = "queued"

    def _deployment_failed(self, revision_id: str) -> None:
        """``retirement.deployment_failed``: the pointer goes back to the newest revision that
        succeeded, and the failed revision's retirement is admitted."""
        if self.agent.active_revision_id == revision_id:
            number = self.number(revision_id)
            earlier = [
                r for r in self.admitted if r.revision_number < number and self.succeeded(r.id)
            ]
            previous = max(earlier, key=lambda r: r.revision_number).id if earlier else None
            if self.agent.desired_runtime_state != "running":
                previous = None
            self.agent = dataclasses.replace(self.agent, active_revision_id=previous, endpoint=None)
        self.enqueue("repair", revision_id)

    # -- the stop pass (the real plan, the reconciler's steps) ---------------------------------

    def run_stop(
        self, item: Item, driver: WorldDriver, guard: claim_guard.FakeClaimGuard
    ) -> outcome.PassResult:
        assert item.requested_at is not None
        plan = agent_stop.plan_stop(
            self.agent,
            self.admitted,
            requested_at=item.requested_at,
            driver_name=driver.name,
        )
        if isinstance(plan, Code):
            return self.settle(item, "succeeded", plan)

        def superseded() -> outcome.PassResult | None:
            guard.fence()
            if self.agent.desired_runtime_state != "stopped":
                return self.settle(item, "succeeded", Code.STOP_SUPERSEDED)
            return None

        ended = agent_stop.stop_each(driver, guard, plan, superseded)
        if ended is not None:
            return ended
        guard.fence()
        if self.agent.desired_runtime_state != "stopped":
            return self.settle(item, "succeeded", Code.STOP_SUPERSEDED)
        if plan.active is not None and self.agent.active_revision_id == plan.active.id:
            self.agent = dataclasses.replace(self.agent, active_revision_id=None, endpoint=None)
        return self.settle(item, "succeeded", Code.AGENT_STOPPED)

    def run_delete(
        self, item: Item, driver: WorldDriver, guard: claim_guard.FakeClaimGuard
    ) -> outcome.PassResult:
        """Retire every revision, newest first, each under a renewed claim (the real
        reconciler's effects, ``agent_delete.retire_all``)."""
        agent_delete.retire_all(driver, guard, self.admitted)
        guard.fence()
        for other in self.items.values():
            if other is not item:
                other.state = "gone"
        return self.settle(item, "succeeded", Code.AGENT_DELETED)


class WorldStore:
    """``RevisionStore`` of one claimed revision item over the world (see the module)."""

    def __init__(
        self, world: World, item: Item, guard: claim_guard.FakeClaimGuard, *, maintenance: bool
    ) -> None:
        self.world, self.item, self.guard, self.maintenance = world, item, guard, maintenance

    def load(self) -> revision_snapshot.Snapshot | outcome.PassResult:
        self.guard.fence()
        world, revision_id = self.world, self.item.revision_id
        assert revision_id is not None
        if world.deleting:
            return self.fail(Code.INVALID_AGENT_STATE)
        revision = world.revision(revision_id)
        deployment = world.deployment(revision_id)
        retire = self.maintenance and deployment is not None and deployment.state == "failed"
        if (
            self.maintenance
            and not retire
            and (deployment is None or deployment.reason == Code.REVISION_SUPERSEDED)
        ):
            return self.complete(Code.REVISION_SUPERSEDED)
        return revision_snapshot.snapshot(
            world.agent,
            revision,
            world.admitted,
            driver_name=fake_driver.FAKE_DRIVER_NAME,
            credential=None,
            successor_id=None if retire else world.pending_successor(revision.revision_number),
            retired=world.retired,
            retire=retire,
        )

    def refresh(self, snapshot: revision_snapshot.Snapshot) -> revision_snapshot.Snapshot:
        self.guard.fence()
        successor = self.world.pending_successor(snapshot.revision.revision_number)
        return dataclasses.replace(snapshot, agent=self.world.agent, successor_id=successor)

    def move_pointer(
        self, snapshot: revision_snapshot.Snapshot
    ) -> revision_store.Moved | outcome.PassResult:
        self.guard.fence()
        agent = self.world.agent
        if agent.desired_runtime_state != "running":
            return "stopped"
        if agent.active_revision_id != snapshot.agent.active_revision_id:
            return self.retry(Code.ACTIVE_REVISION_CHANGED)
        self.world.agent = dataclasses.replace(
            agent, active_revision_id=snapshot.revision.id, endpoint=None
        )
        return "moved"

    def publish_activation(
        self,
        snapshot: revision_snapshot.Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revision_rows.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult:
        self.guard.fence()
        if self.world.agent.active_revision_id != snapshot.revision.id:
            return self.retry(Code.ACTIVE_REVISION_CHANGED)
        self.world.agent = dataclasses.replace(self.world.agent, endpoint=activation.endpoint)
        self.world.retired.update(r.id for r in retired)
        return self.world.settle(self.item, "succeeded", code)

    def degrade(
        self, snapshot: revision_snapshot.Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult:
        self.guard.fence()
        if self.world.agent.active_revision_id != snapshot.revision.id:
            return self.world.settle(self.item, "succeeded", Code.REVISION_MAINTENANCE_SUPERSEDED)
        if recheck_ms is None:
            return self.world.settle(self.item, "succeeded", Code.REVISION_DEGRADED)
        return self.world.defer(self.item, Code.REVISION_INCOMPLETE)

    def complete(self, code: Code) -> outcome.PassResult:
        self.guard.fence()
        return self.world.settle(self.item, "succeeded", code)

    def publish_retirement(self, snapshot: revision_snapshot.Snapshot) -> outcome.PassResult:
        self.guard.fence()
        world = self.world
        world.retired.add(snapshot.revision.id)
        active = world.agent.active_revision_id
        if (
            world.agent.desired_runtime_state == "running"
            and active not in (None, snapshot.revision.id)
            and not any(item.revision_id == active for item in world.live("repair"))
        ):
            world.enqueue("repair", active)
        return world.settle(self.item, "succeeded", Code.REVISION_RETIRED)

    def supersede(self, snapshot: revision_snapshot.Snapshot) -> outcome.PassResult:
        return self.complete(Code.REVISION_SUPERSEDED)

    def defer(self, code: Code, *, delay_ms: int | None) -> outcome.PassResult:
        self.guard.fence()
        return self.world.defer(self.item, code)

    def fail(self, code: Code) -> outcome.PassResult:
        self.guard.fence()
        return self.world.settle(self.item, "failed", code)

    def retry(self, code: Code) -> outcome.PassResult:
        self.guard.fence()
        return self.world.retry(self.item, code)


class WorldDriver(fake_driver.FakeComputeDriver):
    """A Compute Driver whose runtimes are the world's ``running`` set (see the module); the
    calls a revision pass makes are the world's, the rest the fake driver's."""

    def __init__(self, world: World) -> None:
        super().__init__(requires_stopped_predecessors=world.dedicated, maintenance_interval_s=30.0)
        self.world = world
        self.guard: claim_guard.FakeClaimGuard | None = None
        self.passes_calls = 0
        """Compute calls of the current pass."""

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        return self.capabilities

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        self._effect(operation, "prepare_revision", revision)
        world, number = self.world, revision.revision_number
        active = world.agent.active_revision_id
        if active is not None and world.succeeded(active) and world.number(active) > number:
            world.older_started.append((number, world.number(active)))
        world.running.add(revision.revision_id)
        if revision.revision_id in world.failing:
            return base.Failed("RUNTIME_STARTUP_FAILED", permanent=True)
        return base.Ready()

    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation | base.Pending | base.Failed:
        self._effect(operation, "activate_revision", revision)
        if revision.revision_id not in self.world.running:
            raise base.TransientDriverError("REVISION_NOT_RUNNING")
        return base.Activation(f"fake://{revision.revision_id}")

    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self._effect(operation, "stop_revision", revision)
        self.world.running.discard(revision.revision_id)

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self._effect(operation, "retire_revision", revision)
        self.world.running.discard(revision.revision_id)

    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        """Healthy at ``fake://<id>`` while the revision's runtime runs; gone otherwise."""
        return {
            spec.revision_id: base.Observed(True, f"fake://{spec.revision_id}")
            if spec.revision_id in self.world.running
            else base.Observed(False, code="REVISION_NOT_RUNNING")
            for spec in revisions
        }

    def _effect(self, operation: base.Operation, method: str, revision: base.RevisionSpec) -> None:
        # no check of the abort event here: the reconciler itself must not call after a loss
        lost = self.guard is not None and self.guard.lost
        self.world.effects.append(Effect(method, revision.revision_number, lost))
        self.passes_calls += 1
        if self.guard is not None and self.passes_calls == self.world.lose_after:
            self.guard.lose()  # the lease lapsed while this call ran
