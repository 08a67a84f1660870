"""The database side of a revision pass: each read (``revision_reads``) and each publication
(``revision_publications``) in its own short transaction, fenced by the claim.

``revision.run_pass`` sees it through the ``RevisionStore`` protocol, so the pass's logic can be
exercised with an in-memory store; this module is the PostgreSQL one. Nothing here calls a
Compute Driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from occ.drivers.compute import base
from occ.foundation import codes
from occ.reconcile import (
    environment,
    outcome,
    revision_publications,
    revision_reads,
    settle,
    startup_warnings,
)
from occ.reconcile.context import ClaimContext
from occ.reconcile.revision_publications import ACTIVATE_ACTION, RETIRE_ACTION, Moved
from occ.reconcile.revision_snapshot import Snapshot
from occ.state import revisions, work_queue
from occ.state.db import Session

__all__ = ["ACTIVATE_ACTION", "RETIRE_ACTION", "DatabaseRevisionStore", "Moved", "RevisionStore"]

Code = codes.Code


class RevisionStore(Protocol):
    """Reads and publications of one revision pass (each one fenced transaction)."""

    def load(self) -> Snapshot | outcome.PassResult: ...

    def refresh(self, snapshot: Snapshot) -> Snapshot: ...

    def move_pointer(self, snapshot: Snapshot) -> Moved | outcome.PassResult: ...

    def publish_activation(
        self,
        snapshot: Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revisions.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult: ...

    def degrade(
        self, snapshot: Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult: ...

    def complete(self, code: Code) -> outcome.PassResult: ...

    def publish_retirement(self, snapshot: Snapshot) -> outcome.PassResult: ...

    def supersede(self, snapshot: Snapshot) -> outcome.PassResult: ...

    def defer(self, code: Code, *, delay_ms: int | None) -> outcome.PassResult: ...

    def fail(self, code: Code) -> outcome.PassResult: ...

    def retry(self, code: Code) -> outcome.PassResult: ...


class DatabaseRevisionStore:
    """``RevisionStore`` on PostgreSQL for one claimed revision item."""

    def __init__(
        self, worker: environment.Worker, context: ClaimContext, *, maintenance: bool
    ) -> None:
        self._worker = worker
        self._context = context
        self._maintenance = maintenance

    def load(self) -> Snapshot | outcome.PassResult:
        with self._worker.database.transaction() as session:
            return revision_reads.load(
                session, self._worker, self._context, maintenance=self._maintenance
            )

    def refresh(self, snapshot: Snapshot) -> Snapshot:
        """Under a renewed claim, the snapshot read again (``revision_reads.refresh``)."""
        with self._fenced() as session:
            return revision_reads.refresh(session, snapshot)

    def move_pointer(self, snapshot: Snapshot) -> Moved | outcome.PassResult:
        with self._fenced() as session:
            return revision_publications.move_pointer(
                session, self._worker, self._context, snapshot
            )

    def publish_activation(
        self,
        snapshot: Snapshot,
        activation: base.Activation,
        code: Code,
        *,
        retired: Sequence[revisions.Revision] = (),
        warnings: startup_warnings.Judged = (),
    ) -> outcome.PassResult:
        with self._fenced() as session:
            return revision_publications.activation(
                session,
                self._worker,
                self._context,
                snapshot,
                activation,
                code=code,
                retired=retired,
                warnings=warnings,
            )

    def degrade(
        self, snapshot: Snapshot, reason_code: str, *, recheck_ms: int | None
    ) -> outcome.PassResult:
        """A repair found the active revision unhealthy (``revision_publications.degradation``)."""
        with self._fenced() as session:
            return revision_publications.degradation(
                session, self._worker, self._context, snapshot, reason_code, recheck_ms=recheck_ms
            )

    def complete(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.complete(session, self._context, code)

    def publish_retirement(self, snapshot: Snapshot) -> outcome.PassResult:
        with self._fenced() as session:
            return revision_publications.retirement(session, self._worker, self._context, snapshot)

    def supersede(self, snapshot: Snapshot) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return revision_publications.supersession(session, self._context, snapshot)

    def defer(self, code: Code, *, delay_ms: int | None) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.defer(
                session, self._worker.policy, self._context, code, delay_ms=delay_ms
            )

    def fail(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.fail(session, self._context, code)

    def retry(self, code: Code) -> outcome.PassResult:
        with self._worker.database.transaction() as session:
            return settle.retry(session, self._worker.policy, self._context, code)

    @contextmanager
    def _fenced(self) -> Iterator[Session]:
        """A transaction whose first statement renews the claim: a stale worker's transaction
        rolls back whole."""
        with self._worker.database.transaction() as session:
            work_queue.renew(session, self._worker.policy, self._context.claim)
            yield session
