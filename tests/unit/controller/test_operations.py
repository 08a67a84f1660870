"""The operator use cases' pure parts: which work ids are well formed, and the opaque cursor."""

from __future__ import annotations

import uuid

import pytest

from occ.controller import operations
from occ.foundation import ids
from occ.state import work_keys


def _keys() -> list[work_keys.WorkKey]:
    namespace_id, agent_id = ids.new("namespace"), ids.new("agent")
    revision_id = ids.new("agent_revision")
    return [
        work_keys.namespace_ready(namespace_id),
        work_keys.namespace_deleted(namespace_id),
        work_keys.agent_stopped(agent_id, uuid.uuid4()),
        work_keys.agent_deleted(agent_id),
        work_keys.revision_reconcile(revision_id),
        work_keys.revision_maintenance(revision_id, 12),
    ]


@pytest.mark.parametrize("key", _keys(), ids=lambda key: key.kind.value)
def test_every_kind_of_work_id_is_valid(key: work_keys.WorkKey) -> None:
    assert operations.valid_work_id(str(key))


@pytest.mark.parametrize(
    "value",
    [
        "namespace:ns_nope:reconcile:ready",  # the outline of a key, not a key
        f"agent:{ids.new('namespace')}:reconcile:deleted",  # a Namespace id for an Agent
        f"namespace:{ids.new('namespace')}:reconcile:stopped",  # no such kind
        f"agent:{ids.new('agent')}:reconcile:stopped",  # a stop without its request id
        f"agent_revision:{ids.new('agent_revision')}:maintenance:x",
        f" namespace:{ids.new('namespace')}:reconcile:ready",
        "",
        "a" * (operations.WORK_ID_MAX + 1),
        None,
        42,
    ],
)
def test_anything_else_is_not(value: object) -> None:
    assert not operations.valid_work_id(value)
