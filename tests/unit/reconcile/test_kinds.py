"""``kinds``: a handler's metrics label is what its kind's items are about."""

from __future__ import annotations

import pytest

from occ.reconcile import registry
from occ.state.work_keys import WorkKind


@pytest.mark.parametrize(
    ("kind", "label"),
    [
        (WorkKind.NAMESPACE_READY, "namespace"),
        (WorkKind.NAMESPACE_DELETED, "namespace"),
        (WorkKind.AGENT_STOPPED, "agent"),
        (WorkKind.AGENT_DELETED, "agent"),
        (WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL, "agent"),
        (WorkKind.REVISION_RECONCILE, "agent_revision"),
        (WorkKind.REVISION_MAINTENANCE, "agent_revision"),
    ],
)
def test_the_metric_label_is_the_kinds_subject(kind: WorkKind, label: str) -> None:
    assert registry.HANDLERS[kind].metric_label == label
