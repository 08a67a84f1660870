"""The work kinds as the workers see them: how each is named in logs and metrics, and the
effect a terminal failure of that kind has beyond the work row.

Only ``NAMESPACE_READY`` has such an effect today: a Namespace whose provisioning failed for
good must not stay ``provisioning``, so it becomes ``failed`` (audited) in the same
transaction that failed the item, wherever that happens (a reconciler, a retry at the limit,
a deadline, or recovery). The queue itself knows nothing about Namespaces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.state import audit, namespaces, values
from occ.state.db import Session
from occ.state.work_keys import WorkKind

FailureEffect = Callable[[Session, values.WorkItem, Mapping[str, Any]], None]


def _no_effect(session: Session, item: values.WorkItem, details: Mapping[str, Any]) -> None:
    """Nothing beyond the work row (the failure is visible there and in its evidence)."""


def _fail_provisioning_namespace(
    session: Session, item: values.WorkItem, details: Mapping[str, Any]
) -> None:
    """The Namespace becomes ``failed`` if it is still provisioning, with one audit event."""
    namespace_id = item.owner.namespace_id
    if not namespaces.transition(session, namespace_id, expected="provisioning", status="failed"):
        return
    audit.work_event(
        session,
        item,
        action="namespaces.lifecycle.ensure",
        outcome="failure",
        resource_kind="namespace",
        resource_id=namespace_id,
        details={**details, "reasonCode": item.reason_code, "status": "failed"},
    )


@dataclass(frozen=True)
class Kind:
    """What the workers know about one work kind."""

    metric_label: str
    """The ``work_kind`` label of the reconciliation metrics."""
    operation: str
    """The ``operation`` field of log lines."""
    on_failed: FailureEffect
    """Applied in the transaction that failed an item of this kind for good."""


KINDS: Final[Mapping[WorkKind, Kind]] = {
    WorkKind.NAMESPACE_READY: Kind("namespace", "namespace.ready", _fail_provisioning_namespace),
    WorkKind.NAMESPACE_DELETED: Kind("namespace", "namespace.deleted", _no_effect),
    WorkKind.AGENT_STOPPED: Kind("agent", "agent.stopped", _no_effect),
    WorkKind.AGENT_DELETED: Kind("agent", "agent.deleted", _no_effect),
    WorkKind.REVISION_RECONCILE: Kind("agent_revision", "agent_revision.reconcile", _no_effect),
    WorkKind.REVISION_MAINTENANCE: Kind("agent_revision", "agent_revision.maintenance", _no_effect),
}


def settle(
    session: Session, item: values.WorkItem, details: Mapping[str, Any] | None = None
) -> None:
    """Apply the kind's terminal-failure effect when ``item`` ended failed; else nothing."""
    if item.state == values.WorkState.FAILED_PERMANENT:
        KINDS[item.kind].on_failed(session, item, details or {})
