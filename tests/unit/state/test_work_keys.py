"""``WorkKey``: every kind formats to its documented shape and parses back, anything else is
refused."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occ.state import work_keys
from occ.state.work_keys import WorkKey, WorkKind

uuids = st.uuids(version=4).map(str)
buckets = st.integers(min_value=0, max_value=10**15 - 1)
NS, AGT, REV = (f"{prefix}_{uuid.uuid4()}" for prefix in ("ns", "agt", "rev"))
STOP = uuid.uuid4()


@given(subject=uuids, request=st.uuids(version=4), bucket=buckets)
def test_every_kind_formats_and_parses_back(subject: str, request: uuid.UUID, bucket: int) -> None:
    keys = {
        WorkKind.NAMESPACE_READY: work_keys.namespace_ready(f"ns_{subject}"),
        WorkKind.NAMESPACE_DELETED: work_keys.namespace_deleted(f"ns_{subject}"),
        WorkKind.AGENT_STOPPED: work_keys.agent_stopped(f"agt_{subject}", request),
        WorkKind.AGENT_DELETED: work_keys.agent_deleted(f"agt_{subject}"),
        WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL: WorkKey(
            WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL, f"agt_{subject}", f"acc_{request}"
        ),
        WorkKind.REVISION_RECONCILE: work_keys.revision_reconcile(f"rev_{subject}"),
        WorkKind.REVISION_MAINTENANCE: work_keys.revision_maintenance(f"rev_{subject}", bucket),
    }
    assert set(keys) == set(WorkKind)  # a new kind needs a case here

    for kind, key in keys.items():
        parsed = WorkKey.parse(str(key))
        assert parsed == key and parsed.kind == kind
        assert subject in str(key)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: work_keys.namespace_ready(NS), f"namespace:{NS}:reconcile:ready"),
        (lambda: work_keys.namespace_deleted(NS), f"namespace:{NS}:reconcile:deleted"),
        (lambda: work_keys.agent_stopped(AGT, STOP), f"agent:{AGT}:reconcile:stopped:{STOP}"),
        (lambda: work_keys.agent_deleted(AGT), f"agent:{AGT}:reconcile:deleted"),
        (lambda: work_keys.revision_reconcile(REV), f"agent_revision:{REV}:reconcile"),
        (lambda: work_keys.revision_maintenance(REV, 42), f"agent_revision:{REV}:maintenance:42"),
    ],
)
def test_each_kind_has_its_documented_shape(make: Callable[[], WorkKey], expected: str) -> None:
    assert str(make()) == expected


def test_every_stop_request_gets_a_key_of_its_own() -> None:
    first, second = work_keys.agent_stopped(AGT), work_keys.agent_stopped(AGT)

    assert first != second and first.subject == second.subject == AGT
    assert WorkKey.parse(str(first)) == first


@pytest.mark.parametrize(
    "work_id",
    [
        "",
        "namespace",
        f"namespace:{NS}",
        f"namespace:{NS}:reconcile:gone",
        f"namespace:{AGT}:reconcile:ready",  # an Agent id where a Namespace id belongs
        f"agent:{NS}:reconcile:deleted",
        f"agent_revision:{AGT}:reconcile",
        f"agent:{AGT}:reconcile:stopped",  # a stop without its request
        f"agent:{AGT}:reconcile:stopped:not-a-uuid",
        f"agent:{AGT}:reconcile:stopped:{uuid.uuid1()}",  # not a uuid4
        f"agent_revision:{REV}:maintenance:",
        f"agent_revision:{REV}:maintenance:-1",
        f"agent_revision:{REV}:maintenance:1e3",
        f"agent_revision:{REV}:maintenance:{10**15}",  # 16 digits
        f"agent_revision:{REV.upper()}:reconcile",
        f"agent_revision:{REV}:reconcile ",
        f" agent_revision:{REV}:reconcile",
        f"agent_revision:{REV}:reconcile\n",
        f"agent_revision:{REV}:reconcile:extra",
        f"agent_revision:rev_{uuid.uuid4().hex}:reconcile",  # no dashes
    ],
)
def test_a_malformed_work_id_is_refused(work_id: str) -> None:
    with pytest.raises(ValueError, match="not a work id"):
        WorkKey.parse(work_id)


def test_what_a_user_asked_for_is_intent_and_a_repair_is_upkeep() -> None:
    classes = {kind: spec.priority for kind, spec in work_keys.SPECS.items()}
    assert classes == {
        WorkKind.NAMESPACE_READY: work_keys.Priority.INTENT,
        WorkKind.NAMESPACE_DELETED: work_keys.Priority.INTENT,
        WorkKind.AGENT_STOPPED: work_keys.Priority.INTENT,
        WorkKind.AGENT_DELETED: work_keys.Priority.INTENT,
        WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL: work_keys.Priority.INTENT,
        WorkKind.REVISION_RECONCILE: work_keys.Priority.INTENT,
        WorkKind.REVISION_MAINTENANCE: work_keys.Priority.REPAIR,
    }
    # the weights order the classes and give each a share of a batch
    assert work_keys.Priority.INTENT > work_keys.Priority.REPAIR > work_keys.Priority.PERIODIC > 0
