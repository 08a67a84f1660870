"""How the workers run one work kind: its ``Handler``, declared beside its reconciler.

A handler says how an item of its kind starts (the start token exchanged, and what the same
statement reads for the pass), the reconciler that runs the pass, how the kind is named in logs
and metrics, the Agent operation a success of it ends, and the effect a terminal failure of an
item of the kind has beyond the work row. The executor and recovery look handlers up in
``registry``; nothing below the reconcilers names a kind. The queue's own knowledge of a kind
(its id, its target columns) is ``occ.state.work_keys.KindSpec``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from occ.foundation import codes
from occ.reconcile import environment, outcome
from occ.reconcile.context import ClaimContext, FailureEffect, no_effect
from occ.state import values, work_queue
from occ.state.work_keys import SPECS, Subject, WorkKind

Loaded = TypeVar("Loaded")
"""What a kind's start reads beside the claim for its pass (``None`` for most kinds)."""


@dataclass(frozen=True)
class Started(Generic[Loaded]):
    """A started claim and what its start read."""

    claim: values.Claim
    loaded: Loaded


Starter = Callable[[environment.Worker, str, uuid.UUID], "Started[Loaded] | None"]
"""Exchange a dispatch token for a run claim (``None``: a stale message)."""
Reconciler = Callable[[environment.Worker, ClaimContext, Loaded], outcome.PassResult]
"""One pass over a started item."""


def start_claim(worker: environment.Worker, work_id: str, token: uuid.UUID) -> Started[None] | None:
    """The plain start: one statement on an autocommit connection, nothing read beside it."""
    with worker.database.autocommit_connection() as connection:
        claim = work_queue.start_token(connection, worker.policy, work_id, token)
    return None if claim is None else Started(claim, None)


@dataclass(frozen=True)
class AgentOperation:
    """An Agent operation an operator waits for, which a pass of a kind ends: measured from
    the admission to a pass that succeeded with one of ``codes``."""

    name: str
    """The ``operation`` label of ``occ_agent_operation_duration_seconds``."""
    codes: frozenset[codes.Code]


METRIC_LABELS: Final = {
    Subject.NAMESPACE: "namespace",
    Subject.AGENT: "agent",
    Subject.REVISION: "agent_revision",
}
"""The ``work_kind`` label of the reconciliation metrics, by what a kind's items are about."""


@dataclass(frozen=True, kw_only=True)
class Handler(Generic[Loaded]):
    """Everything the workers know about one work kind."""

    kind: WorkKind
    start: Starter[Loaded]
    reconcile: Reconciler[Loaded]
    operation: str
    """The ``operation`` field of log lines."""
    on_failed: FailureEffect = field(default=no_effect)
    """Applied in the transaction that fails an item of this kind for good, wherever that
    happens (a reconciler, a retry at the limit, a deadline, or recovery)."""
    ends: AgentOperation | None = None
    deploy_timing: bool = False
    """Whether ``worker.completed`` carries the deployment's timing (a revision's deploy work
    only: maintenance, cleanup and stop work carry none)."""

    @property
    def metric_label(self) -> str:
        """The ``work_kind`` label of the reconciliation metrics: the kind's subject."""
        return METRIC_LABELS[SPECS[self.kind].subject]


def index(*handlers: Handler[Any]) -> Mapping[WorkKind, Handler[Any]]:
    """Handlers by kind; ``ValueError`` unless every kind has exactly one."""
    by_kind: dict[WorkKind, Handler[Any]] = {}
    for handler in handlers:
        if handler.kind in by_kind:
            raise ValueError(f"two handlers for {handler.kind}")
        by_kind[handler.kind] = handler
    missing = set(WorkKind) - set(by_kind)
    if missing:
        raise ValueError(f"no handler for {sorted(missing)}")
    return by_kind
