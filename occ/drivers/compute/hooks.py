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
deadline (5 s by default) so that cancelling a pass cannot suppress the cleanup. Hook inputs
are deep-frozen copies, and the hook list is fixed when the dispatcher is built. Hooks must
be idempotent: a pass may be repeated by another worker.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NoReturn, Protocol, runtime_checkable

from occ.drivers.compute import base
from occ.telemetry import observability

MAX_ENVIRONMENT_ENTRIES: Final = 64
"""Most launch environment entries the hooks of one workload may contribute together."""

ENVIRONMENT_NAME: Final = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
"""Accepted launch environment names (matched whole)."""

PLACEHOLDER_VALUE: Final = re.compile(r"opaque-[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""Accepted launch environment values: opaque placeholders, never secret material."""

RESERVED_NAMES: Final = frozenset(
    {
        "HOME",
        "PATH",
        "TMPDIR",
        "CODEX_HOME",
        "NODE_OPTIONS",
        "NODE_PATH",
        "BASH_ENV",
        "ENV",
        "LOG_FORMAT",
        "RUST_LOG",
    }
)
"""Names the runtime owns; hooks may not set them."""

RESERVED_PREFIXES: Final = ("XDG_", "OPENCLAW_", "OTEL_", "LD_", "DYLD_")
"""Name prefixes the runtime owns; hooks may not set names starting with them."""

COMPENSATION_TIMEOUT_S: Final = 5.0
"""Deadline of a compensating cleanup whose operation was already aborted."""

HOOK_FAILED: Final = "LIFECYCLE_HOOK_FAILED"
"""Driver code of a hook that failed with something other than a ``DriverError``."""

ENVIRONMENT_INVALID: Final = "LAUNCH_ENVIRONMENT_INVALID"
"""Driver code of a launch environment contribution the rules refuse (permanent)."""


@dataclasses.dataclass
class LaunchSpec:
    """What a ``before_workload_start`` hook may add to: the workload's launch environment."""

    environment: dict[str, str] = dataclasses.field(default_factory=dict)


@runtime_checkable
class LifecycleHooks(Protocol):
    """The callbacks one hook owner provides (every one idempotent).

    ``name`` identifies the owner in errors and logs (``<capability>:<id>``). Each callback
    receives the operation of the Compute call (check ``operation.check()``, sleep with
    ``operation.wait()``) and a frozen copy of the resource.
    """

    name: str

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


class HookDispatcher:
    """Calls the hooks of every selected owner with the ordering and compensation rules."""

    def __init__(
        self,
        hooks: Sequence[LifecycleHooks] = (),
        *,
        compensation_timeout_s: float = COMPENSATION_TIMEOUT_S,
    ) -> None:
        self.hooks: tuple[LifecycleHooks, ...] = tuple(hooks)
        self.compensation_timeout_s = compensation_timeout_s

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
        frozen = _freeze_namespace(namespace)
        completed: list[LifecycleHooks] = []
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
        frozen = _freeze_revision(revision)
        environment: dict[str, str] = {}
        completed: list[LifecycleHooks] = []
        for hook in self.hooks:
            launch = LaunchSpec(environment=dict(environment))
            try:
                hook.before_workload_start(operation, frozen, launch)
            except Exception as exc:
                self._compensate_start(operation, completed, frozen)
                _raise_classified(exc, hook, "before_workload_start")
            completed.append(hook)
            try:
                environment.update(_validated_additions(hook, environment, launch.environment))
            except base.PermanentDriverError:
                self._compensate_start(operation, completed, frozen)
                raise
        return types.MappingProxyType(dict(environment))

    def compensate_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> None:
        """Undo a successful ``before_workload_start`` whose workload then failed to launch.

        Runs ``before_workload_stop`` on every owner in reverse, under compensation rules:
        failures are logged, never raised, and an aborted operation gets a fresh deadline.
        """
        self._compensate_start(operation, list(self.hooks), _freeze_revision(revision))

    # -- teardown phases (reverse order, a failure stops the teardown) -------------------

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Run every owner's ``before_workload_stop`` in reverse; raise on the first failure."""
        frozen = _freeze_revision(revision)
        self._tear_down("before_workload_stop", lambda h: h.before_workload_stop(operation, frozen))

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Run every owner's ``before_namespace_delete`` in reverse; raise on the first failure."""
        frozen = _freeze_namespace(namespace)
        self._tear_down(
            "before_namespace_delete", lambda h: h.before_namespace_delete(operation, frozen)
        )

    def _tear_down(self, phase: str, call: Callable[[LifecycleHooks], None]) -> None:
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
        completed: list[LifecycleHooks],
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
        completed: list[LifecycleHooks],
        phase: str,
        call: Callable[[LifecycleHooks, base.Operation], None],
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


# -- launch environment rules ------------------------------------------------------------


def is_reserved(name: str) -> bool:
    """Whether the runtime owns the environment name ``name``."""
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def validate_environment(environment: Mapping[str, str]) -> None:
    """Raise ``PermanentDriverError`` unless ``environment`` obeys the launch rules."""
    _check_entries("launch environment", environment, total=len(environment))


def _validated_additions(
    hook: LifecycleHooks, before: Mapping[str, str], after: Mapping[str, Any]
) -> dict[str, str]:
    """The entries ``hook`` added, once they obey the rules (it may not change others)."""
    where = f"hook {hook.name}"
    for name, value in before.items():
        if after.get(name) != value:
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where} changed or removed an entry another hook added"
            )
    added = {name: value for name, value in after.items() if name not in before}
    _check_entries(where, added, total=len(before) + len(added))
    return added


def _check_entries(where: str, entries: Mapping[Any, Any], *, total: int) -> None:
    if total > MAX_ENVIRONMENT_ENTRIES:
        raise base.PermanentDriverError(
            ENVIRONMENT_INVALID,
            f"{where}: {total} launch environment entries, at most {MAX_ENVIRONMENT_ENTRIES}",
        )
    for name, value in entries.items():
        # Never quote a value (it could be a secret) nor a name that failed its pattern.
        if not isinstance(name, str) or not ENVIRONMENT_NAME.fullmatch(name):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where}: an environment name is not [A-Z_][A-Z0-9_]*"
            )
        if is_reserved(name):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID, f"{where}: the environment name {name} is reserved"
            )
        if not isinstance(value, str) or not PLACEHOLDER_VALUE.fullmatch(value):
            raise base.PermanentDriverError(
                ENVIRONMENT_INVALID,
                f"{where}: the value of {name} is not an opaque placeholder (opaque-...)",
            )


# -- errors ------------------------------------------------------------------------------


def _raise_classified(exc: Exception, hook: LifecycleHooks, phase: str) -> NoReturn:
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


# -- frozen inputs -----------------------------------------------------------------------


def _freeze_revision(revision: base.RevisionSpec) -> base.RevisionSpec:
    return dataclasses.replace(
        revision, configuration_document=freeze(revision.configuration_document)
    )


def _freeze_namespace(namespace: base.NamespaceSpec) -> base.NamespaceSpec:
    return dataclasses.replace(namespace)  # only strings: a copy is frozen already


def freeze(value: Any) -> Any:
    """A deep, read-only copy: mappings become ``MappingProxyType``, sequences tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(item) for item in value)
    return value
