"""An in-memory Compute Driver for unit tests of the reconcilers: scripted answers and a journal.

``FakeComputeDriver`` implements the whole ``base.ComputeDriver`` protocol without touching
anything outside the process. Its capabilities are constructor arguments; each operation answers
from a per-method script (observations, activations, exceptions, or an action run during the
call) and falls back to success when nothing is scripted. Every call that went ahead is recorded
in ``calls`` as ``(method, subject)`` so tests assert the order and count of Compute effects.
It must never sleep, start threads or reach a network: a unit test using it runs in
milliseconds.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias, cast

from occ.drivers.compute import base

FAKE_DRIVER_NAME: Final = "fake"

Action: TypeAlias = Callable[[base.Operation], object]
"""Runs during the call (e.g. to lose the claim meanwhile); its return value is the answer."""
Step: TypeAlias = (
    base.Ready
    | base.Pending
    | base.Failed
    | base.Activation
    | BaseException
    | type[BaseException]
    | Action
    | None
)

_ANSWERS: Final[dict[str, tuple[type, ...]]] = {
    "preflight": (type(None),),
    "ensure_namespace": (base.Ready, base.Pending, base.Failed),
    "delete_namespace": (base.Ready, base.Pending, base.Failed),
    "prepare_revision": (base.Ready, base.Pending, base.Failed),
    "activate_revision": (base.Activation, base.Pending, base.Failed),
    "stop_revision": (type(None),),
    "retire_revision": (type(None),),
    "delete_agent_credentials": (type(None),),
}
"""The methods that can be scripted, with the answers the contract allows each."""


@dataclass(frozen=True)
class Invalid:
    """Wraps an answer the contract does not allow, to test how a reconciler treats it."""

    answer: object


class FakeComputeDriver:
    """``base.ComputeDriver`` in memory (see the module).

    ``calls`` holds the calls that went ahead, oldest first; ``aborted`` those refused because
    the operation's abort event was set; ``specs`` the revision specs received, with their
    method, so a test can see which calls carried the credential. ``journal``, a list shared
    with the other fakes (the store, the guard), gets every call too, so a test can assert how
    their steps interleave.
    """

    def __init__(
        self,
        *,
        name: str = FAKE_DRIVER_NAME,
        activation_order: base.ActivationOrder = base.ActivationOrder.AFTER_COMMIT,
        requires_stopped_predecessors: bool = False,
        maintenance_interval_s: float | None = None,
        journal: list[tuple[str, str]] | None = None,
    ) -> None:
        self.name = name
        self.capabilities = base.Capabilities(
            activation_order=activation_order,
            requires_stopped_predecessors=requires_stopped_predecessors,
            maintenance_interval_s=maintenance_interval_s,
        )
        self.calls: list[tuple[str, str]] = []
        self._journal = journal
        self.aborted: list[tuple[str, str]] = []
        self.specs: list[tuple[str, base.RevisionSpec]] = []
        self._scripts: dict[tuple[str, str | None], collections.deque[Step | Invalid]] = {}
        self.observations: dict[str, base.Observed] = {}
        """What ``observe_revisions`` answers for a revision (default: healthy at
        ``fake://<revision id>``)."""
        self.observed_batches: list[list[str]] = []
        """The revision ids of each ``observe_revisions`` call, in order."""

    # -- scripting ----------------------------------------------------------------------------

    def script(self, method: str, *steps: Step | Invalid, subject: str | None = None) -> None:
        """Queue answers for ``method``, one per call, before the default takes over again.

        ``subject`` limits them to calls about one revision (or Namespace, or Agent); answers
        for a subject are used before the method's general ones. An exception (instance or
        class) is raised; an action is run with the operation and its result answered; an
        answer the contract does not allow must be wrapped in ``Invalid``.
        """
        allowed = _ANSWERS.get(method)
        if allowed is None:
            raise ValueError(f"{method!r} is not a scriptable Compute Driver method")
        for step in steps:
            if not _acceptable(step, allowed):
                raise TypeError(f"{method} cannot answer {step!r} (wrap it in Invalid to test it)")
        self._scripts.setdefault((method, subject), collections.deque()).extend(steps)

    def unused_script(self) -> dict[tuple[str, str | None], list[Step | Invalid]]:
        """The scripted answers no call consumed (a test expecting them used asserts ``{}``)."""
        return {key: list(queue) for key, queue in self._scripts.items() if queue}

    def count(self, method: str) -> int:
        """How many calls of ``method`` went ahead."""
        return sum(1 for called, _ in self.calls if called == method)

    # -- the protocol -------------------------------------------------------------------------

    def preflight(self) -> None:
        self._answer("preflight", "", None, None)

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        return _observation(self._answer("ensure_namespace", namespace.id, operation, base.Ready()))

    def delete_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        return _observation(self._answer("delete_namespace", namespace.id, operation, base.Ready()))

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        self.specs.append(("prepare_revision", revision))
        answer = self._answer("prepare_revision", revision.revision_id, operation, base.Ready())
        return _observation(answer)

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        # a read, not an effect: not journalled, so order assertions see Compute effects only
        return self.capabilities

    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation | base.Pending | base.Failed:
        self.specs.append(("activate_revision", revision))
        default = base.Activation(f"fake://{revision.revision_id}")
        answer = self._answer("activate_revision", revision.revision_id, operation, default)
        # an Invalid answer passes through unchanged: the reconciler under test must refuse it
        return cast("base.Activation | base.Pending | base.Failed", answer)

    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.specs.append(("stop_revision", revision))
        self._answer("stop_revision", revision.revision_id, operation, None)

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.specs.append(("retire_revision", revision))
        self._answer("retire_revision", revision.revision_id, operation, None)

    def delete_agent_credentials(
        self, operation: base.Operation, namespace_id: str, agent_id: str
    ) -> None:
        self._answer("delete_agent_credentials", agent_id, operation, None)

    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        self.observed_batches.append([revision.revision_id for revision in revisions])
        return {
            revision.revision_id: self.observations.get(
                revision.revision_id, base.Observed(True, f"fake://{revision.revision_id}")
            )
            for revision in revisions
        }

    # -- answering ----------------------------------------------------------------------------

    def _answer(
        self, method: str, subject: str, operation: base.Operation | None, default: object
    ) -> object:
        if operation is not None and operation.abort.is_set():
            self.aborted.append((method, subject))
            operation.check()
        self.calls.append((method, subject))
        if self._journal is not None:
            self._journal.append((method, subject))
        step = self._next_step(method, subject)
        if step is _UNSCRIPTED:
            return default
        if isinstance(step, Invalid):
            return step.answer
        if isinstance(step, BaseException) or (
            isinstance(step, type) and issubclass(step, BaseException)
        ):
            raise step
        if callable(step):
            answer = step(operation) if operation is not None else None
            if operation is not None:
                operation.check()  # a real driver checks between steps: an abort meanwhile wins
            return answer
        return step

    def _next_step(self, method: str, subject: str) -> object:
        for key in ((method, subject), (method, None)):
            queue = self._scripts.get(key)
            if queue:
                return queue.popleft()
        return _UNSCRIPTED


_UNSCRIPTED: Final = object()


def _acceptable(step: object, allowed: tuple[type, ...]) -> bool:
    if isinstance(step, Invalid | BaseException) or callable(step):
        return True  # exception classes are callable too
    return isinstance(step, allowed)


def _observation(answer: object) -> base.Observation:
    # an Invalid answer passes through unchanged: the reconciler under test must refuse it
    return cast(base.Observation, answer)
