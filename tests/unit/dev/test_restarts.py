"""The restart policy of ``occ dev``: exponential backoff, its cap and reset, giving up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from occ.dev import restarts

POLICY = restarts.RestartPolicy(
    first_delay_s=0.5, factor=2.0, max_delay_s=4.0, stable_after_s=60.0, startup_failures_allowed=3
)


@dataclass
class Clock:
    """A clock the test moves by hand."""

    now: float = 1000.0

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


@dataclass
class Child:
    """A child driven through exits with an injected clock, as the fleet drives one."""

    clock: Clock
    history: restarts.History = field(default_factory=restarts.History)
    started_at: float = 0.0

    def __post_init__(self) -> None:
        self.started_at = self.clock.now

    def exits_after(
        self, seconds: float, *, startup_failure: bool = False
    ) -> restarts.Restart | restarts.GiveUp:
        exited_at = self.clock.advance(seconds)
        decision = restarts.after_exit(
            POLICY,
            self.history,
            started_at=self.started_at,
            exited_at=exited_at,
            startup_failure=startup_failure,
        )
        self.history = decision.history
        if isinstance(decision, restarts.Restart):
            self.started_at = self.clock.advance(decision.delay_s)
        return decision


def _delay(decision: restarts.Restart | restarts.GiveUp) -> float:
    assert isinstance(decision, restarts.Restart), decision
    return decision.delay_s


def test_quick_exits_double_the_delay_up_to_the_cap() -> None:
    child = Child(Clock())
    delays = [_delay(child.exits_after(1.0)) for _ in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert child.history.failures == 6


def test_a_stable_run_starts_the_backoff_over() -> None:
    child = Child(Clock())
    assert [_delay(child.exits_after(1.0)) for _ in range(3)] == [0.5, 1.0, 2.0]
    assert _delay(child.exits_after(60.0)) == 0.5  # up for stable_after_s: a fresh start
    assert child.history == restarts.History(failures=1, startup_failures=0)
    assert _delay(child.exits_after(59.9)) == 1.0  # just short of it: backoff continues


def test_repeated_start_up_failures_give_up() -> None:
    child = Child(Clock())
    assert _delay(child.exits_after(2.0, startup_failure=True)) == 0.5
    assert _delay(child.exits_after(2.0, startup_failure=True)) == 1.0
    decision = child.exits_after(2.0, startup_failure=True)
    assert isinstance(decision, restarts.GiveUp)
    assert decision.history.startup_failures == 3


def test_start_up_failures_count_only_in_a_row() -> None:
    child = Child(Clock())
    for _ in range(2):
        assert isinstance(child.exits_after(2.0, startup_failure=True), restarts.Restart)
    assert isinstance(child.exits_after(2.0), restarts.Restart)  # a crash, not a check failure
    assert child.history.startup_failures == 0
    for _ in range(2):
        assert isinstance(child.exits_after(2.0, startup_failure=True), restarts.Restart)
    assert isinstance(child.exits_after(2.0, startup_failure=True), restarts.GiveUp)


def test_a_stable_run_also_forgets_earlier_start_up_failures() -> None:
    child = Child(Clock())
    for _ in range(2):
        child.exits_after(2.0, startup_failure=True)
    assert isinstance(child.exits_after(120.0, startup_failure=True), restarts.Restart)
    assert child.history.startup_failures == 1


def test_the_delay_never_overflows() -> None:
    assert POLICY.delay_s(10_000) == POLICY.max_delay_s


@pytest.mark.parametrize(
    "arguments",
    [
        {"first_delay_s": -1.0},
        {"first_delay_s": 5.0, "max_delay_s": 1.0},
        {"factor": 0.5},
        {"stable_after_s": 0.0},
        {"startup_failures_allowed": 0},
    ],
)
def test_a_nonsensical_policy_is_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        restarts.RestartPolicy(**arguments)
