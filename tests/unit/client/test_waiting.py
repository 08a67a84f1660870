"""``occ.client.waiting``: exit statuses by how an operation ended, and progress on a terminal
(one line rewritten) or off it (one line per change)."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest

from occ.client import http, waiting


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _run(
    observations: list[waiting.Observation | BaseException], timeout_s: float, terminal: bool
) -> tuple[waiting.Outcome, str]:
    clock, stream, pending = FakeClock(), io.StringIO(), iter(observations)
    outcome = waiting.wait(
        _raising(lambda: next(pending)),
        timeout_s=timeout_s,
        progress=waiting.Progress(stream, terminal=terminal, label="deployment rev_1"),
        clock=clock,
        sleep=clock.sleep,
    )
    return outcome, stream.getvalue()


def _raising(
    look: Callable[[], waiting.Observation | BaseException],
) -> Callable[[], waiting.Observation]:
    def observe() -> waiting.Observation:
        seen = look()
        if isinstance(seen, BaseException):
            raise seen
        return seen

    return observe


PENDING = waiting.Observation("pending", progress="RUNTIME_STARTING")


def test_an_operation_reaching_its_goal_exits_0_with_plain_lines_per_change() -> None:
    outcome, printed = _run(
        [PENDING, PENDING, waiting.Observation("active", ended=True)], 10, terminal=False
    )
    assert (outcome.exit_status, outcome.last.state) == (0, "active")
    assert printed.splitlines() == [
        "deployment rev_1: pending RUNTIME_STARTING (0.0 s)",
        "deployment rev_1: active (1.0 s)",
    ]


def test_a_failed_operation_exits_1_and_a_terminal_line_is_rewritten() -> None:
    failed = waiting.Observation("failed", ended=True, failed=True, code="X")
    outcome, printed = _run([PENDING, failed], 10, terminal=True)
    assert outcome.exit_status == 1
    assert printed.count("\r") == 2 and printed.endswith("\n") and printed.count("\n") == 1


def test_the_timeout_exits_3_after_the_last_look() -> None:
    outcome, _ = _run([PENDING] * 10, 0.5, terminal=False)
    assert outcome.exit_status == 3
    assert outcome.elapsed_s == 0.5


RATE_LIMITED = http.ApiError("RATE_LIMITED", "slow down", 429, retry_after_s=5)
UNAVAILABLE = http.ApiError("DEPENDENCY_UNAVAILABLE", "try later", 503)
UNREACHABLE = http.ApiError("UNREACHABLE", "cannot reach the API")


def test_a_look_refused_for_now_is_tried_again_after_its_retry_after() -> None:
    done = waiting.Observation("active", ended=True)
    outcome, printed = _run(
        [PENDING, RATE_LIMITED, UNAVAILABLE, UNREACHABLE, done], 30, terminal=False
    )
    assert (outcome.exit_status, outcome.last.state) == (0, "active")
    # 0.5 s, then the 5 s Retry-After, then the poll interval (no Retry-After) twice
    assert outcome.elapsed_s == 0.5 + 5 + 0.5 + 0.5
    assert printed.splitlines() == [
        "deployment rev_1: pending RUNTIME_STARTING (0.0 s)",
        "deployment rev_1: pending RATE_LIMITED (0.5 s)",
        "deployment rev_1: pending DEPENDENCY_UNAVAILABLE (5.5 s)",
        "deployment rev_1: pending UNREACHABLE (6.0 s)",
        "deployment rev_1: active (6.5 s)",
    ]


def test_a_retry_after_past_the_timeout_is_cut_to_it_and_times_out() -> None:
    outcome, _ = _run([RATE_LIMITED, RATE_LIMITED, PENDING], 2, terminal=False)
    assert (outcome.exit_status, outcome.last.state, outcome.elapsed_s) == (3, "unknown", 2)


@pytest.mark.parametrize("status", [400, 401, 403, 500])
def test_any_other_refusal_ends_the_wait(status: int) -> None:
    refused = http.ApiError("REFUSED", "no", status, retry_after_s=1)
    with pytest.raises(http.ApiError) as raised:
        _run([PENDING, refused, PENDING], 30, terminal=False)
    assert raised.value is refused


def test_ctrl_c_ends_the_wait_with_130_and_the_last_look() -> None:
    outcome, printed = _run([PENDING, KeyboardInterrupt()], 30, terminal=True)
    assert (outcome.exit_status, outcome.last) == (130, PENDING)
    assert printed.endswith("\n")  # the rewritten line is closed
