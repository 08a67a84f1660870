"""The decision table of a revision pass's first read (``revision_snapshot.refusal``), without a
database: one broken fact gives its code, several give the first in the documented order, none
lets the pass go on."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occ.foundation import codes
from occ.reconcile import revision_snapshot
from occ.state import agents, iam_policy, namespaces, values, work_keys
from tests.support import fake_driver, scenarios

Code = codes.Code
Read = revision_snapshot.RevisionRead
_NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _healthy(*, maintenance: bool) -> Read:
    """A read every check accepts (maintenance reads also hold a live deployment)."""
    world = scenarios.agent(revisions=1, active=1)
    agent, revision = world.agent, world.revision
    namespace = namespaces.Namespace(
        id=agent.namespace_id,
        name="team",
        status=namespaces.NamespaceStatus.READY,
        existing_namespace=None,
        created_by=revision.actor_id,
        created_at=_NOW,
        updated_at=_NOW,
        deleted_at=None,
    )
    principal = iam_policy.Principal(
        id=agent.service_principal_id,
        name="agent",
        kind=iam_policy.PrincipalKind.SERVICE,
        namespace_id=agent.namespace_id,
        agent_id=agent.id,
        created_at=_NOW,
        disabled_at=None,
    )
    deployment = _item(revision.id, values.WorkState.SUCCEEDED, Code.REVISION_ACTIVATED)
    return Read(
        namespace=namespace,
        agent=agent,
        revision=revision,
        principal=principal,
        deployment=deployment if maintenance else None,
    )


def _item(revision_id: str, state: values.WorkState, code: str | None) -> values.WorkItem:
    key = work_keys.revision_reconcile(revision_id)
    return values.WorkItem(
        id=str(key),
        key=key,
        owner=values.WorkOwner(namespace_id="ns", actor_id="prn"),
        state=state,
        attempt_count=1,
        available_at=_NOW,
        claimed=False,
        started=False,
        lease_expires_at=None,
        completed_at=_NOW,
        reason_code=code,
        result_data=None,
        last_progress_code=None,
        last_progress_at=None,
        created_at=_NOW,
        updated_at=_NOW,
    )


def _replace_in(field: str, **changes: object) -> Callable[[Read], Read]:
    def breaking(read: Read) -> Read:
        value = getattr(read, field)
        return dataclasses.replace(read, **{field: dataclasses.replace(value, **changes)})

    return breaking


def _without(field: str) -> Callable[[Read], Read]:
    return lambda read: dataclasses.replace(read, **{field: None})


BREAKS: list[tuple[str, Callable[[Read], Read], Code]] = [
    ("namespace missing", _without("namespace"), Code.INVALID_REVISION_OWNER),
    ("agent missing", _without("agent"), Code.INVALID_REVISION_OWNER),
    ("revision missing", _without("revision"), Code.INVALID_REVISION_OWNER),
    ("namespace deleting", _replace_in("namespace", status="deleting"), Code.NAMESPACE_NOT_READY),
    ("namespace tombstoned", _replace_in("namespace", deleted_at=_NOW), Code.NAMESPACE_NOT_READY),
    (
        "revision of another principal",
        _replace_in("revision", service_principal_id="prn_x"),
        Code.INVALID_REVISION_OWNER,
    ),
    (
        "agent deleting",
        _replace_in("agent", status=agents.AgentStatus.DELETING),
        Code.INVALID_AGENT_STATE,
    ),
    ("principal missing", _without("principal"), Code.INVALID_AGENT_PRINCIPAL),
    (
        "principal disabled",
        _replace_in("principal", disabled_at=_NOW),
        Code.INVALID_AGENT_PRINCIPAL,
    ),
    (
        "harness in another mode",
        _replace_in("revision", harness_mode="dedicated"),
        Code.HARNESS_MISMATCH,
    ),
    (
        "revision of another driver",
        _replace_in("revision", compute_driver="other"),
        Code.COMPUTE_DRIVER_MISMATCH,
    ),
]
"""Each fact the table checks, broken on its own, in the documented order, with its code."""


def _refusal(read: Read, *, maintenance: bool = False) -> Code | None:
    return revision_snapshot.refusal(
        read, driver_name=fake_driver.FAKE_DRIVER_NAME, maintenance=maintenance
    )


@pytest.mark.parametrize("maintenance", [False, True])
def test_a_read_every_check_accepts_goes_on(maintenance: bool) -> None:
    assert _refusal(_healthy(maintenance=maintenance), maintenance=maintenance) is None


@pytest.mark.parametrize(("fact", "breaking", "code"), BREAKS, ids=[b[0] for b in BREAKS])
def test_one_broken_fact_ends_the_pass_with_its_code(
    fact: str, breaking: Callable[[Read], Read], code: Code
) -> None:
    assert _refusal(breaking(_healthy(maintenance=False))) == code


@pytest.mark.parametrize(
    ("deployment", "expected"),
    [
        (None, Code.REVISION_SUPERSEDED),
        ((values.WorkState.SUCCEEDED, Code.REVISION_SUPERSEDED), Code.REVISION_SUPERSEDED),
        ((values.WorkState.SUCCEEDED, Code.REVISION_ALREADY_ACTIVE), None),
        ((values.WorkState.QUEUED, None), None),
    ],
)
def test_maintenance_of_a_revision_whose_deployment_did_not_stand_is_superseded(
    deployment: tuple[values.WorkState, Code | None] | None, expected: Code | None
) -> None:
    read = _healthy(maintenance=True)
    assert read.revision is not None
    item = None if deployment is None else _item(read.revision.id, *deployment)
    read = dataclasses.replace(read, deployment=item)

    assert _refusal(read, maintenance=True) == expected
    assert _refusal(read, maintenance=False) is None  # a deploy pass never reads it
    assert not revision_snapshot.retiring(read, maintenance=True)


def test_maintenance_of_a_failed_deployment_retires_without_principal_or_permission() -> None:
    read = _healthy(maintenance=True)
    assert read.revision is not None and read.principal is not None
    failed = _item(read.revision.id, values.WorkState.FAILED_PERMANENT, Code.AUTHORIZATION_DENIED)
    disabled = dataclasses.replace(
        read.principal, disabled_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    )
    read = dataclasses.replace(read, deployment=failed, principal=disabled)

    assert _refusal(read, maintenance=True) is None
    assert revision_snapshot.retiring(read, maintenance=True)
    assert not revision_snapshot.retiring(read, maintenance=False)


@given(st.sets(st.integers(min_value=0, max_value=len(BREAKS) - 1), min_size=1))
def test_with_several_broken_facts_the_first_in_order_decides(broken: set[int]) -> None:
    read = _healthy(maintenance=False)
    for index in sorted(broken, reverse=True):  # a missing row last: it hides the others
        read = BREAKS[index][1](read)

    # a missing row is checked first of all, whichever it is
    missing = [i for i in broken if i < 3]
    first = min(missing) if missing else min(broken)
    assert _refusal(read) == BREAKS[first][2]


def test_a_retirement_repairs_the_agents_other_running_active_revision() -> None:
    world = scenarios.agent(revisions=2, active=1)
    active, failed = world.revisions

    assert revision_snapshot.repair_target(world.agent, failed.id) == active.id
    owner = revision_snapshot.repair_owner(active)
    assert (owner.namespace_id, owner.actor_id) == (active.namespace_id, active.actor_id)
    assert (owner.agent_id, owner.revision_id) == (active.agent_id, active.id)


@pytest.mark.parametrize(
    ("case", "active", "desired"),
    [
        ("the agent runs the retired revision", 2, agents.DesiredRuntimeState.RUNNING),
        ("the agent runs no revision", None, agents.DesiredRuntimeState.RUNNING),
        ("the agent is stopped", 1, agents.DesiredRuntimeState.STOPPED),
    ],
)
def test_a_retirement_repairs_nothing_when(
    case: str, active: int | None, desired: agents.DesiredRuntimeState
) -> None:
    world = scenarios.agent(revisions=2, active=active, desired_runtime_state=desired)

    assert revision_snapshot.repair_target(world.agent, world.revisions[1].id) is None


def test_a_retirement_repairs_nothing_for_a_deleted_agent() -> None:
    assert revision_snapshot.repair_target(None, "rev") is None
