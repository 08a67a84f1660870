"""Lifecycle hooks: how other drivers take part in the Namespace and workload lifecycle.

A Compute Driver owns every transition; hook owners (Configuration, Sandbox, IAM drivers, in
their selection order) only get called at four points:

* ``after_namespace_prepared`` at the end of ``ensure_namespace``, and
  ``before_workload_start`` before a workload starts: preparation phases, run in order. When
  one fails, the hooks that already completed are compensated with the teardown counterpart
  (``before_namespace_delete`` / ``before_workload_stop``) in reverse order, then the failure
  is raised naming the failing hook.
* ``before_workload_stop`` before a workload stops or retires, and
  ``before_namespace_delete`` before Namespace resources go: teardown phases, run in reverse
  order. A failure aborts the teardown (the caller raises, the work is retried), so access is
  always revoked before what it protected disappears.

``before_workload_start`` hooks may add entries to the launch environment. Only opaque
placeholders are accepted (``opaque-...``, never a plaintext secret), under names that are
not reserved by the runtime, at most 64 in all; the dispatcher validates every entry a hook
added before the next hook runs and hands Compute a frozen copy.

Compensation runs under the operation's abort event; when that is already set, under a fresh
deadline (5 s by default) so that cancelling a pass cannot suppress the cleanup. Hooks must be
idempotent: a pass may be repeated by another worker.

What an owner can never see: its inputs are deep-frozen copies without the harness credential
(``RevisionSpec.credential`` is always ``None`` for an owner), and its ``Operation`` carries the
abort event and the work id but never the claim token, the fencing token that publishes work.
Each owner is registered once, when the dispatcher is built: its identity (``<capability>:<id>``)
and its four callbacks are captured then (``RegisteredOwner``), so neither the list nor a
callback changes afterwards, even if the owner object does.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NoReturn, Protocol, runtime_checkable

from occ.drivers.compute import base
from occ.drivers.compute import launch as launch_rules
from occ.telemetry import observability

LaunchSpec = launch_rules.LaunchSpec
"""What a ``before_workload_start`` hook may add to (``occ.drivers.compute.launch``)."""

ENVIRONMENT_INVALID: Final = launch_rules.ENVIRONMENT_INVALID
"""Driver code of a launch contribution the rules refuse (permanent)."""

COMPENSATION_TIMEOUT_S: Final = 5.0
"""Deadline of a compensating cleanup whose operation was already aborted."""

CAPABILITIES: Final = ("configuration", "sandbox", "iam", "secret")
"""Capabilities of the drivers that may own lifecycle hooks (never ``compute``)."""

OWNER_NAME: Final = re.compile(r"(configuration|sandbox|iam|secret):[a-z0-9][a-z0-9-]{0,62}")
"""An owner's identity, ``<capability>:<id>`` (matched whole)."""

STAGES: Final = (
    "after_namespace_prepared",
    "before_workload_start",
    "before_workload_stop",
    "before_namespace_delete",
)
"""The four callbacks every owner provides."""

HOOK_FAILED: Final = "LIFECYCLE_HOOK_FAILED"
"""Driver code of a hook that failed with something other than a ``DriverError``."""


@runtime_checkable
class LifecycleHooks(Protocol):
    """The callbacks one hook owner provides (every one idempotent).

    ``name`` identifies the owner in errors and logs (``<capability>:<id>``). Each callback
    receives the operation of the Compute call (check ``operation.check()``, sleep with
    ``operation.wait()``) and a frozen copy of the resource.
    """

    @property
    def name(self) -> str: ...

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """The Namespace's infrastructure exists; prepare what this owner adds to it."""

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: LaunchSpec
    ) -> None:
        """A workload of ``revision`` is about to start; may add ``launch.environment`` entries."""

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """A workload of ``revision`` is about to stop or retire: revoke its access."""

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """The Namespace's infrastructure is about to be removed."""


class OwnerInvalid(ValueError):
    """A hook owner cannot be registered: a bad identity, a missing callback, a duplicate."""


@dataclasses.dataclass(frozen=True)
class RegisteredOwner:
    """One owner as registered: its identity and the callbacks captured at that moment."""

    name: str
    after_namespace_prepared: Callable[[base.Operation, base.NamespaceSpec], None]
    before_workload_start: Callable[[base.Operation, base.RevisionSpec, LaunchSpec], None]
    before_workload_stop: Callable[[base.Operation, base.RevisionSpec], None]
    before_namespace_delete: Callable[[base.Operation, base.NamespaceSpec], None]

    @property
    def capability(self) -> str:
        return self.name.partition(":")[0]


def register(owner: LifecycleHooks) -> RegisteredOwner:
    """Snapshot ``owner``: its identity and its four callbacks, each checked.

    Raises:
        OwnerInvalid: the name is not ``<capability>:<id>`` or a callback is missing.
    """
    name = getattr(owner, "name", None)
    if not isinstance(name, str) or not OWNER_NAME.fullmatch(name):
        raise OwnerInvalid(
            "a hook owner's name must be <capability>:<id> with a capability of "
            f"{', '.join(CAPABILITIES)}"
        )
    callbacks = {stage: getattr(owner, stage, None) for stage in STAGES}
    missing = [stage for stage, callback in callbacks.items() if not callable(callback)]
    if missing:
        raise OwnerInvalid(f"hook owner {name} lacks {', '.join(missing)}")
    return RegisteredOwner(name=name, **callbacks)  # type: ignore[arg-type]


class HookDispatcher:
    """Calls the hooks of every selected owner with the ordering and compensation rules."""

    def __init__(
        self,
        hooks: Sequence[LifecycleHooks] = (),
        *,
        compensation_timeout_s: float = COMPENSATION_TIMEOUT_S,
    ) -> None:
        """Register ``hooks`` in selection order (``OwnerInvalid`` for a bad or repeated one)."""
        registered = tuple(register(owner) for owner in hooks)
        names = [owner.name for owner in registered]
        if len(set(names)) != len(names):
            raise OwnerInvalid(f"a hook owner is selected twice: {', '.join(names)}")
        self.hooks: tuple[RegisteredOwner, ...] = registered
        self.compensation_timeout_s = compensation_timeout_s

    @property
    def owners(self) -> tuple[str, ...]:
        """The owners' identities, in selection order."""
        return tuple(owner.name for owner in self.hooks)

    def __bool__(self) -> bool:
        return bool(self.hooks)

    # -- preparation phases (in order, compensated on failure) ---------------------------

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Run every owner's ``after_namespace_prepared`` in order.

        On a failure, ``before_namespace_delete`` runs on the owners that completed, in
        reverse, and the failure is raised naming the failing owner.
        """
        operation, frozen = for_owners(operation), _freeze_namespace(namespace)
        completed: list[RegisteredOwner] = []
        for hook in self.hooks:
            try:
                hook.after_namespace_prepared(operation, frozen)
            except Exception as exc:
                self._compensate(
                    operation,
                    completed,
                    "before_namespace_delete",
                    lambda h, op: h.before_namespace_delete(op, frozen),
                    namespaceId=namespace.id,
                )
                _raise_classified(exc, hook, "after_namespace_prepared")
            completed.append(hook)

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> Mapping[str, str]:
        """Run every owner's ``before_workload_start`` in order; the validated environment.

        Each owner sees the entries the earlier ones added and may only add new ones. The
        entries it adds are validated before the next owner runs. On a failure (the owner's
        or a refused entry), ``before_workload_stop`` runs on the owners whose hook completed,
        in reverse, and the failure is raised naming the owner. The result is a frozen copy.
        """
        operation, frozen = for_owners(operation), _freeze_revision(revision)
        environment: dict[str, str] = {}
        completed: list[RegisteredOwner] = []
        for hook in self.hooks:
            launch = LaunchSpec(environment=dict(environment))
            try:
                hook.before_workload_start(operation, frozen, launch)
            except Exception as exc:
                self._compensate_start(operation, completed, frozen)
                _raise_classified(exc, hook, "before_workload_start")
            completed.append(hook)
            try:
                environment.update(
                    launch_rules.validated_additions(
                        f"hook {hook.name}", environment, launch.environment
                    )
                )
            except base.PermanentDriverError:
                self._compensate_start(operation, completed, frozen)
                raise
        return launch_rules.freeze(environment)  # type: ignore[no-any-return]

    def compensate_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> None:
        """Undo a successful ``before_workload_start`` whose workload then failed to launch.

        Runs ``before_workload_stop`` on every owner in reverse, under compensation rules:
        failures are logged, never raised, and an aborted operation gets a fresh deadline.
        """
        self._compensate_start(for_owners(operation), list(self.hooks), _freeze_revision(revision))

    # -- teardown phases (reverse order, a failure stops the teardown) -------------------

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Run every owner's ``before_workload_stop`` in reverse; raise on the first failure."""
        operation, frozen = for_owners(operation), _freeze_revision(revision)
        self._tear_down("before_workload_stop", lambda h: h.before_workload_stop(operation, frozen))

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Run every owner's ``before_namespace_delete`` in reverse; raise on the first failure."""
        operation, frozen = for_owners(operation), _freeze_namespace(namespace)
        self._tear_down(
            "before_namespace_delete", lambda h: h.before_namespace_delete(operation, frozen)
        )

    def _tear_down(self, phase: str, call: Callable[[RegisteredOwner], None]) -> None:
        """``call`` on every owner in reverse; the first failure is raised naming its owner."""
        for hook in reversed(self.hooks):
            try:
                call(hook)
            except Exception as exc:
                _raise_classified(exc, hook, phase)

    # -- compensation --------------------------------------------------------------------

    def _compensate_start(
        self,
        operation: base.Operation,
        completed: list[RegisteredOwner],
        revision: base.RevisionSpec,
    ) -> None:
        self._compensate(
            operation,
            completed,
            "before_workload_stop",
            lambda h, op: h.before_workload_stop(op, revision),
            namespaceId=revision.namespace_id,
            agentId=revision.agent_id,
            revisionId=revision.revision_id,
        )

    def _compensate(
        self,
        operation: base.Operation,
        completed: list[RegisteredOwner],
        phase: str,
        call: Callable[[RegisteredOwner, base.Operation], None],
        **fields: Any,
    ) -> None:
        """Best effort: ``call`` on ``completed`` in reverse; failures are only logged."""
        with _CompensationOperation(operation, self.compensation_timeout_s) as operations:
            for hook in reversed(completed):
                try:
                    call(hook, operations.current())
                except Exception as exc:  # compensation is best effort: keep going
                    observability.log(
                        "compute.hook-compensation-failed",
                        level=logging.WARNING,
                        workId=operation.work_id,
                        operation=phase,
                        reason=f"{hook.name}: {_describe(exc)}",
                        error=type(exc).__name__,
                        **fields,
                    )


class _CompensationOperation:
    """The operation compensation runs under: the original while it is not aborted, else one
    with a fresh deadline (created once, on first need, and set when compensation ends)."""

    def __init__(self, operation: base.Operation, timeout_s: float) -> None:
        self.operation = operation
        self.timeout_s = timeout_s
        self.fallback: base.Operation | None = None
        self.timer: threading.Timer | None = None

    def __enter__(self) -> _CompensationOperation:
        return self

    def __exit__(self, *_: object) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.fallback is not None:
            self.fallback.abort.set()  # compensation is over: nothing may linger on it

    def current(self) -> base.Operation:
        if not self.operation.abort.is_set():
            return self.operation
        if self.fallback is None:
            event = threading.Event()
            self.timer = threading.Timer(self.timeout_s, event.set)
            self.timer.daemon = True
            self.timer.start()
            self.fallback = base.Operation(
                work_id=self.operation.work_id, claim_token=self.operation.claim_token, abort=event
            )
        return self.fallback


# -- errors ------------------------------------------------------------------------------


def _raise_classified(exc: Exception, hook: RegisteredOwner, phase: str) -> NoReturn:
    """Raise what a hook failure surfaces as: naming the owner, transient unless known.

    ``Aborted`` passes through unchanged; a ``PermanentDriverError`` stays permanent with
    its code; any other failure is transient (``LIFECYCLE_HOOK_FAILED`` unless it had a code).
    """
    if isinstance(exc, base.Aborted):
        raise exc
    reason = f"hook failed for {hook.name} in {phase}: {_describe(exc)}"
    if isinstance(exc, base.PermanentDriverError):
        raise base.PermanentDriverError(exc.code, reason) from exc
    code = exc.code if isinstance(exc, base.DriverError) else HOOK_FAILED
    raise base.TransientDriverError(code, reason) from exc


def _describe(exc: Exception) -> str:
    """A short description that never carries an arbitrary exception's message."""
    if isinstance(exc, base.Aborted):
        return "aborted"
    if isinstance(exc, base.DriverError):
        return exc.reason or exc.code
    return type(exc).__name__


# -- what owners see ---------------------------------------------------------------------


def for_owners(operation: base.Operation) -> base.Operation:
    """``operation`` as an owner gets it: the same abort event, lease check and work id, and
    no claim token (an owner has no authority to publish the work's outcome)."""
    if not operation.claim_token:
        return operation
    return base.Operation(
        work_id=operation.work_id, claim_token="", abort=operation.abort, leased=operation.leased
    )


def _freeze_revision(revision: base.RevisionSpec) -> base.RevisionSpec:
    """A deep-frozen copy without the harness credential: owners never receive it."""
    return dataclasses.replace(
        revision,
        configuration_document=launch_rules.freeze(revision.configuration_document),
        credential=None,
    )


def _freeze_namespace(namespace: base.NamespaceSpec) -> base.NamespaceSpec:
    return dataclasses.replace(namespace)  # only strings: a copy is frozen already
