"""A stop's plan (``agent_stop.plan_stop``) without a database: what it stops, in which order,
and when it ends before any effect."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occ.foundation import codes
from occ.reconcile import agent_stop
from occ.state import agents
from tests.support import fake_driver, scenarios

Code = codes.Code
STOPPED = agents.DesiredRuntimeState.STOPPED
DRIVER = fake_driver.FAKE_DRIVER_NAME


def _requested_after(world: scenarios.Scenario, number: int) -> dt.datetime:
    """A stop requested right after revision ``number`` was made."""
    return world.numbered(number).created_at + dt.timedelta(seconds=1)


def _plan(world: scenarios.Scenario, requested_after: int) -> agent_stop.StopPlan | codes.Code:
    """The plan of this driver's stop requested right after revision ``requested_after``."""
    return agent_stop.plan_stop(
        world.agent,
        world.revisions,
        requested_at=_requested_after(world, requested_after),
        driver_name=DRIVER,
    )


def test_the_active_revision_stops_first_then_the_others_of_this_driver() -> None:
    world = scenarios.agent(
        revisions=4, active=2, desired_runtime_state=STOPPED, on_other_driver=(3,)
    )

    plan = _plan(world, 4)

    assert isinstance(plan, agent_stop.StopPlan)
    assert plan.active == world.numbered(2)
    assert [r.revision_number for r in plan.others] == [1, 4]


def test_a_revision_made_after_the_request_is_not_stopped() -> None:
    world = scenarios.agent(revisions=3, active=1, desired_runtime_state=STOPPED)

    plan = _plan(world, 2)

    assert isinstance(plan, agent_stop.StopPlan)
    assert [r.revision_number for r in plan.others] == [2]


@pytest.mark.parametrize(
    ("world", "requested_after", "ending"),
    [
        pytest.param(
            scenarios.agent(revisions=2, active=2),
            2,
            Code.STOP_SUPERSEDED,
            id="agent-wanted-running-again",
        ),
        pytest.param(
            scenarios.agent(revisions=2, active=2, desired_runtime_state=STOPPED),
            1,
            Code.STOP_SUPERSEDED,
            id="active-revision-made-after-the-request",
        ),
        pytest.param(
            scenarios.agent(
                revisions=2, active=2, desired_runtime_state=STOPPED, on_other_driver=(2,)
            ),
            2,
            Code.COMPUTE_DRIVER_MISMATCH,
            id="active-revision-of-another-driver",
        ),
    ],
)
def test_a_stop_ends_before_any_effect(
    world: scenarios.Scenario, requested_after: int, ending: codes.Code
) -> None:
    assert _plan(world, requested_after) == ending


@given(
    revisions=st.integers(min_value=1, max_value=6),
    data=st.data(),
)
def test_a_plan_stops_each_revision_of_this_driver_at_most_once(
    revisions: int, data: st.DataObject
) -> None:
    active = data.draw(st.none() | st.integers(min_value=1, max_value=revisions))
    other = data.draw(st.sets(st.integers(min_value=1, max_value=revisions)))
    requested = data.draw(st.integers(min_value=1, max_value=revisions))
    world = scenarios.agent(
        revisions=revisions,
        active=active,
        desired_runtime_state=STOPPED,
        on_other_driver=tuple(other - {active} if active else other),
    )

    plan = _plan(world, requested)

    if active is not None and active > requested:
        assert plan == Code.STOP_SUPERSEDED
        return
    assert isinstance(plan, agent_stop.StopPlan)
    stopped = [*([plan.active] if plan.active else []), *plan.others]
    assert len({r.id for r in stopped}) == len(stopped)
    assert all(r.compute_driver == DRIVER for r in stopped)
    assert all(r.created_at <= _requested_after(world, requested) for r in stopped)
    expected = {n for n in range(1, requested + 1) if n not in other or n == active}
    assert {r.revision_number for r in stopped} == expected
