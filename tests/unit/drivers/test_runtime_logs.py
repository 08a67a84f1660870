"""The runtime log contract's values: queries are checked, lines are cut, a follow ends."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from occ.drivers.compute import runtime_logs


def test_a_query_refuses_a_negative_tail_a_naive_since_and_a_negative_follow() -> None:
    with pytest.raises(ValueError, match="tail"):
        runtime_logs.LogQuery(tail=-1)
    with pytest.raises(ValueError, match="zone"):
        runtime_logs.LogQuery(since=dt.datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="follow_s"):
        runtime_logs.LogQuery(follow=True, follow_s=-1)


def test_a_line_loses_its_end_and_what_is_past_the_limit() -> None:
    assert runtime_logs.cut("line\r\n") == "line"
    assert len(runtime_logs.cut("x" * (runtime_logs.MAX_LINE_BYTES + 10))) == (
        runtime_logs.MAX_LINE_BYTES
    )


def test_a_stop_ends_at_its_deadline_or_when_closed() -> None:
    now = [100.0]
    stop = runtime_logs.Stop(5.0, lambda: now[0])
    assert not stop.over
    assert stop.remaining_s == 5.0
    now[0] = 105.0
    assert stop.over
    assert stop.wait(1.0)
    closed = runtime_logs.Stop(60.0, lambda: 0.0)
    threading.Timer(0.05, closed.close).start()
    assert closed.wait(10.0)
    assert closed.over


def test_errors_carry_stable_codes() -> None:
    assert runtime_logs.unsupported("ssh").code == runtime_logs.UNSUPPORTED
    assert runtime_logs.unavailable("gone").code == runtime_logs.UNAVAILABLE
