"""``occ.client.waiting``: exit statuses by how an operation ended, and progress on a terminal
(one line rewritten) or off it (one line per change)."""

from __future__ import annotations

import io

from occ.client import waiting


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _run(
    observations: list[waiting.Observation], timeout_s: float, terminal: bool
) -> tuple[waiting.Outcome, str]:
    clock, stream, pending = FakeClock(), io.StringIO(), iter(observations)
    outcome = waiting.wait(
        lambda: next(pending),
        timeout_s=timeout_s,
        progress=waiting.Progress(stream, terminal=terminal, label="deployment rev_1"),
        clock=clock,
        sleep=clock.sleep,
    )
    return outcome, stream.getvalue()


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
