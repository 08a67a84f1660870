"""When ``occ dev`` restarts a child that exited on its own: backoff, and when to give up.

Pure: a decision depends only on the policy, the child's history and the times it is given (the
caller's clock), so it can be tested without processes. A child that stayed up at least
``stable_after_s`` starts over with the first delay; each further exit doubles the delay up to
``max_delay_s``. Only a start-up failure (an exit status the child uses for "my start-up checks
failed") repeated ``startup_failures_allowed`` times in a row gives up. Nothing here starts,
stops or signals a process.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RestartPolicy:
    """Exponential backoff, capped, reset after a stable run; the start-up failure limit."""

    first_delay_s: float = 0.5
    factor: float = 2.0
    max_delay_s: float = 30.0
    stable_after_s: float = 60.0
    startup_failures_allowed: int = 3

    def __post_init__(self) -> None:
        if self.first_delay_s < 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError("delays must satisfy 0 <= first_delay_s <= max_delay_s")
        if self.factor < 1 or self.stable_after_s <= 0 or self.startup_failures_allowed < 1:
            raise ValueError("factor >= 1, stable_after_s > 0, startup_failures_allowed >= 1")

    def delay_s(self, failures: int) -> float:
        """The wait before the restart that follows the ``failures``-th exit in a row (>= 1)."""
        if failures < 1:
            raise ValueError("failures counts from 1")
        # cap the exponent first: the float power overflows long before a child gives up
        exponent = min(failures - 1, 64)
        return float(min(self.first_delay_s * self.factor**exponent, self.max_delay_s))


@dataclass(frozen=True)
class History:
    """One child's exits since it last ran stably."""

    failures: int = 0
    """Exits in a row, each after less than ``stable_after_s`` of running."""
    startup_failures: int = 0
    """Of those, the trailing run of start-up failures."""


@dataclass(frozen=True)
class Restart:
    """Start the child again ``delay_s`` after it exited."""

    delay_s: float
    history: History


@dataclass(frozen=True)
class GiveUp:
    """Stop the product: the child failed its start-up checks too many times in a row."""

    history: History


def after_exit(
    policy: RestartPolicy,
    history: History,
    *,
    started_at: float,
    exited_at: float,
    startup_failure: bool,
) -> Restart | GiveUp:
    """What to do about a child that ran from ``started_at`` to ``exited_at`` (one clock)."""
    if exited_at - started_at >= policy.stable_after_s:
        history = History()
    history = replace(
        history,
        failures=history.failures + 1,
        startup_failures=history.startup_failures + 1 if startup_failure else 0,
    )
    if history.startup_failures >= policy.startup_failures_allowed:
        return GiveUp(history)
    return Restart(policy.delay_s(history.failures), history)
