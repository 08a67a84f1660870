"""The Compute Driver contract: operations, capabilities, observations and error classes.

A driver creates real infrastructure for Namespaces and Agent revisions. Every call gets an
``Operation`` carrying the claim's abort event; a driver checks it between steps and stops
with ``Aborted`` once it is set. Observations are values (``Ready``, ``Pending``, ``Failed``);
exceptions are classified as ``TransientDriverError`` (retry) or ``PermanentDriverError``.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from occ.foundation import fingerprints


class DriverError(Exception):
    """A driver could not do what was asked."""

    def __init__(self, code: str, reason: str = "") -> None:
        super().__init__(f"{code}: {reason}" if reason else code)
        self.code = code
        self.reason = reason
        self.status: int | None = None
        """The HTTP status an API answered with, when the driver talks HTTP."""
        self.status_reason: str | None = None
        """The API's own word for the refusal (a Kubernetes Status ``reason``), bounded."""


class TransientDriverError(DriverError):
    """Worth retrying: a dependency was unreachable, timed out or is busy.

    ``retry_after_s`` is how long the dependency asked to be left alone (an HTTP 429's
    ``Retry-After``); the pass waits at least that long before it tries again.
    """

    def __init__(self, code: str, reason: str = "", *, retry_after_s: float | None = None) -> None:
        super().__init__(code, reason)
        self.retry_after_s = retry_after_s


class PermanentDriverError(DriverError):
    """Retrying cannot help: the request or the environment is invalid."""


class Aborted(Exception):
    """The claim was lost or the worker is shutting down: the effect stopped midway."""


@dataclass(frozen=True)
class StartupWarning:
    """Something the runtime reported at start that did not keep it from serving (a plugin it
    could not load, a configuration value it ignored): a code and what it is about."""

    code: str
    detail: str


@dataclass(frozen=True)
class Ready:
    """The target state is reached; a revision's runtime adds the ``warnings`` it reported at
    start (read from the runtime itself, never inferred by the driver)."""

    details: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[StartupWarning, ...] = ()


@dataclass(frozen=True)
class Pending:
    """Progressing; check again later (not before ``retry_after_s`` when it is set)."""

    reason: str
    retry_after_s: float | None = None
    code: str | None = None
    """What the driver waits for, as a stable code (unset: plain progress)."""


@dataclass(frozen=True)
class Failed:
    """The driver observed a failure (``permanent`` or worth a retry)."""

    code: str
    permanent: bool
    reason: str = ""


Observation = Ready | Pending | Failed


class ActivationOrder(enum.StrEnum):
    """Whether Compute activation happens before or after the pointer moves in the database."""

    BEFORE_COMMIT = "before_commit"
    AFTER_COMMIT = "after_commit"


@dataclass(frozen=True)
class Capabilities:
    activation_order: ActivationOrder = ActivationOrder.AFTER_COMMIT
    requires_stopped_predecessors: bool = False
    maintenance_interval_s: float | None = None


def after_commit(maintenance_interval_s: float | None) -> Capabilities:
    """What a driver that activates after the commit can do: re-observe every
    ``maintenance_interval_s`` (never when ``None``; ``ValueError`` unless it is positive)."""
    if maintenance_interval_s is not None and maintenance_interval_s <= 0:
        raise ValueError("maintenance_interval_s must be positive")
    return Capabilities(
        activation_order=ActivationOrder.AFTER_COMMIT, maintenance_interval_s=maintenance_interval_s
    )


@dataclass(frozen=True)
class Operation:
    """One driver call under a claim: who asks, the event that cancels it, and whether the
    claim's last confirmed lease can still be live.

    ``leased`` answers from the worker's own clock: a worker that was frozen (SIGSTOP, a
    long pause) past its lease must not act on waking, even before its renewal thread has
    noticed that the claim is gone.
    """

    work_id: str
    claim_token: str
    abort: threading.Event
    leased: Callable[[], bool] = field(default=lambda: True, compare=False)
    attempt: int = 0
    """The claim's attempt number (1 for an item's first claim; 0 outside a claim), as the
    worker knows it: the effect journal names it, as ``worker.completed`` does."""

    def check(self) -> None:
        """Raise ``Aborted`` once the claim is lost, its lease may have run out, or the worker
        shuts down."""
        if self.abort.is_set() or not self.leased():
            raise Aborted(self.work_id)

    def wait(self, seconds: float) -> None:
        """Sleep up to ``seconds``; raise ``Aborted`` as soon as the abort event is set, and
        on waking when the lease may have run out meanwhile."""
        if self.abort.wait(seconds) or not self.leased():
            raise Aborted(self.work_id)


@dataclass(frozen=True)
class NamespaceSpec:
    """What a driver needs to know about a Namespace."""

    id: str
    name: str
    existing_namespace: str | None = None


@dataclass(frozen=True)
class Credential:
    """The harness credential of a revision, unsealed by the worker for the driver.

    Its ``repr`` and ``str`` show only the fingerprint, so a log line, an exception or a
    traceback that formats it never shows the value. Drivers deliver ``value`` to the runtime
    through a channel of their own (a 0600 file, a Kubernetes Secret, a tmpfs file), never an
    environment literal, a label or a plain manifest field.
    """

    value: str = field(repr=False)
    fingerprint_key: str = field(repr=False)
    """The revision's fingerprint key (``fingerprints.revision_key``): delivered beside the
    value (the runtime shows the same fingerprint), never shown."""

    @property
    def fingerprint(self) -> str:
        """The keyed fingerprint of the value: what the runtime and the annotations show."""
        return fingerprints.of(self.value, self.fingerprint_key)

    def __repr__(self) -> str:
        return f"Credential(fingerprint={self.fingerprint!r})"

    __str__ = __repr__


@dataclass(frozen=True, kw_only=True)
class RevisionSpec:
    """An immutable AgentRevision as a driver sees it.

    ``credential`` is set only for ``prepare_revision`` and ``activate_revision`` of a deploy
    pass, after the worker re-authorized the deploy under its live claim; stop and retire
    calls get ``None``.
    """

    namespace_id: str
    agent_id: str
    revision_id: str
    revision_number: int
    configuration_generation: int
    configuration_document: Mapping[str, Any]
    harness_id: str
    harness_version: str
    harness_mode: str
    service_principal_id: str
    credential: Credential | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Activation:
    """An activated revision: where the Agent's stable endpoint now points.

    A driver whose runtime starts only at activation (``ssh``: the Agent's unit restarts on
    the revision then) adds the ``warnings`` that runtime reported at start; ``None`` means
    the driver reported them with its preparation's ``Ready``.
    """

    endpoint: str | None = None
    warnings: tuple[StartupWarning, ...] | None = None


@dataclass(frozen=True)
class Observed:
    """One active revision's runtime as a bulk observation found it (read-only, no effect)."""

    healthy: bool
    """It runs as its revision says (no drift: the right template, its objects present) and
    is ready to serve."""
    endpoint: str | None = None
    """Where the Agent's stable endpoint reaches it now, as activation would publish it."""
    code: str | None = None
    """Why it is not healthy: a driver code (gone, not ready, drifted, an object lost)."""
    starting: bool = False
    """Not healthy, but on its way: it runs and its health check has not passed since it
    (re)started, nor failed. The observer repairs nothing and looks again at the next
    interval; a runtime that never gets there fails its check, and is then not starting."""


@runtime_checkable
class ComputeDriver(Protocol):
    """What every Compute Driver implements.

    Every operation is idempotent: a pass may be repeated by another worker after a lost
    claim. ``prepare_revision`` starts (or finds) the revision's runtime and reports its
    readiness without moving traffic; ``activate_revision`` points the Agent's stable
    endpoint at it; ``stop_revision`` stops it but keeps its files; ``retire_revision``
    stops it and removes what it owns.
    """

    name: str
    capabilities: Capabilities

    def preflight(self) -> None:
        """Check the driver can work here; raise ``DriverError`` when it cannot."""

    def ensure_namespace(self, operation: Operation, namespace: NamespaceSpec) -> Observation:
        """Create or adopt the Namespace's infrastructure (idempotent)."""

    def delete_namespace(self, operation: Operation, namespace: NamespaceSpec) -> Observation:
        """Remove the Namespace's infrastructure (idempotent; gone is ``Ready``)."""

    def prepare_revision(self, operation: Operation, revision: RevisionSpec) -> Observation:
        """Start or find the revision's runtime; ``Ready`` once it is healthy."""

    def revision_capabilities(self, revision: RevisionSpec) -> Capabilities:
        """The capabilities that apply to this revision (they may depend on its mode)."""

    def activate_revision(
        self, operation: Operation, revision: RevisionSpec
    ) -> Activation | Pending | Failed:
        """Make the revision serve the Agent's stable endpoint (idempotent).

        ``Pending`` while the switch is still rolling out (the pass defers without spending
        an attempt); ``Failed`` when it cannot finish.
        """

    def stop_revision(self, operation: Operation, revision: RevisionSpec) -> None:
        """Stop the revision's runtime; keep its snapshot and data (idempotent)."""

    def retire_revision(self, operation: Operation, revision: RevisionSpec) -> None:
        """Stop the revision and remove everything it owns (idempotent)."""

    def delete_agent_credentials(
        self, operation: Operation, namespace_id: str, agent_id: str
    ) -> None:
        """Remove credentials and data the Agent's runtime owned (after every retirement)."""

    def observe_revisions(self, revisions: Sequence[RevisionSpec]) -> Mapping[str, Observed]:
        """Observe these active revisions, read-only and in bulk: by revision id, an answer for
        every revision asked about. The cost is one listing (or none: a watch cache), never a
        request per revision, so an idle fleet costs what its size in memory costs."""
