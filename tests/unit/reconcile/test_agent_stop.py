"""A stop's plan (``agent_stop.plan_stop``) without a database: what it stops, in which order,
and when it ends before any effect."""

from __future__ import annotations

import datetime as dt

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


def test_the_active_revision_stops_first_then_the_others_of_this_driver() -> None:
    world = scenarios.agent(
        revisions=4, active=2, desired_runtime_state=STOPPED, on_other_driver=(3,)
    )

    plan = agent_stop.plan_stop(
        world.agent,
        world.revisions,
        requested_at=_requested_after(world, 4),
        driver_name=DRIVER,
    )

    assert isinstance(plan, agent_stop.StopPlan)
    assert plan.active == world.numbered(2)
    assert [r.revision_number for r in plan.others] == [1, 4]


def test_a_revision_made_after_the_request_is_not_stopped() -> None:
    world = scenarios.agent(revisions=3, active=1, desired_runtime_state=STOPPED)

    plan = agent_stop.plan_stop(
        world.agent, world.revisions, requested_at=_requested_after(world, 2), driver_name=DRIVER
    )

    assert isinstance(plan, agent_stop.StopPlan)
    assert [r.revision_number for r in plan.others] == [2]


def test_an_agent_wanted_running_again_supersedes_the_stop() -> None:
    world = scenarios.agent(revisions=2, active=2)

    assert (
        agent_stop.plan_stop(
            world.agent,
            world.revisions,
            requested_at=_requested_after(world, 2),
            driver_name=DRIVER,
        )
        == Code.STOP_SUPERSEDED
    )


def test_an_active_revision_made_after_the_request_supersedes_the_stop() -> None:
    world = scenarios.agent(revisions=2, active=2, desired_runtime_state=STOPPED)

    assert (
        agent_stop.plan_stop(
            world.agent,
            world.revisions,
            requested_at=_requested_after(world, 1),
            driver_name=DRIVER,
        )
        == Code.STOP_SUPERSEDED
    )


def test_an_active_revision_of_another_driver_fails_the_stop() -> None:
    world = scenarios.agent(
        revisions=2, active=2, desired_runtime_state=STOPPED, on_other_driver=(2,)
    )

    assert (
        agent_stop.plan_stop(
            world.agent,
            world.revisions,
            requested_at=_requested_after(world, 2),
            driver_name=DRIVER,
        )
        == Code.COMPUTE_DRIVER_MISMATCH
    )


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

    plan = agent_stop.plan_stop(
        world.agent,
        world.revisions,
        requested_at=_requested_after(world, requested),
        driver_name=DRIVER,
    )

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
