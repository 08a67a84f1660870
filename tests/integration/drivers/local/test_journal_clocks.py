"""The effect journal orders the effects of workers whose wall clocks disagree: a child process
whose wall clock is a minute off (libfaketime) journals wrong ``startedAt`` times but monotonic
readings on the machine's one monotonic clock, which is what the chaos checker compares."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import journal
from tests.support import shifted_clocks

CHILD = """
import sys, threading
from pathlib import Path
from occ.drivers.compute import base
from occ.drivers.compute.local import journal
operation = base.Operation(work_id="work_child", claim_token="child", abort=threading.Event())
with journal.Journal(Path(sys.argv[1])).effect(operation, "ensure_namespace", {}):
    pass
"""


@pytest.mark.parametrize("offset_s", [60, -60])
def test_a_worker_a_minute_off_journals_true_monotonic_times(tmp_path: Path, offset_s: int) -> None:
    path = tmp_path / "effects.jsonl"
    before = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env={**os.environ, **shifted_clocks.environment(offset_s)},
        check=True,
        timeout=60,
    )
    operation = base.Operation(work_id="work_parent", claim_token="parent", abort=threading.Event())
    with journal.Journal(path).effect(operation, "ensure_namespace", {}):
        pass
    child_started, child_ended, parent_started, _ = journal.Journal(path).entries()
    assert child_started["token"] == "child" and parent_started["token"] == "parent"
    # the child's wall clock is off by the offset: its wall times cannot be compared with ours
    wall_gap = parent_started["startedAt"] - child_ended["endedAt"]
    assert abs(wall_gap + offset_s) < 10, wall_gap
    # its monotonic times can: the child's effect ended before ours started, after ``before``
    assert before <= child_started["startedMonotonic"] <= child_ended["endedMonotonic"]
    assert child_ended["endedMonotonic"] <= parent_started["startedMonotonic"] < before + 60
