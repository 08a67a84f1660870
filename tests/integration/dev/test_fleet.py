"""The fleet of ``occ dev`` with real child processes: restarts, giving up, ordered stop.

Children are small Python commands, so each case runs in seconds; the policy is fast (tens of
milliseconds of backoff) but the code paths are those ``occ dev`` runs with its real children.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from occ.dev import fleet, processes, restarts
from tests.support.processes import wait_for

FAST = restarts.RestartPolicy(
    first_delay_s=0.05, factor=2.0, max_delay_s=0.2, stable_after_s=30.0, startup_failures_allowed=3
)


def _text(path: Path) -> str:
    """A child's log so far (created on its first output)."""
    return path.read_text() if path.exists() else ""


def _python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def _spec(name: str, code: str, **options: Any) -> fleet.ChildSpec:
    return fleet.ChildSpec(name, _python(code), dict(os.environ), **options)


SLEEPER = "import time, os; print('started', os.getpid(), flush=True); time.sleep(600)"


@pytest.fixture
def events() -> Iterator[list[dict[str, object]]]:
    """The JSON events ``observability.log`` writes while the test runs."""
    found: list[dict[str, object]] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.name == "occ":  # occ.dev's own, human records pass this logger too
                found.append(json.loads(record.getMessage()))

    logger = logging.getLogger("occ")
    handler, previous = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield found
    logger.removeHandler(handler)
    logger.setLevel(previous)


@pytest.fixture
def started() -> Iterator[list[fleet.Fleet]]:
    fleets: list[fleet.Fleet] = []
    yield fleets
    for one in fleets:  # a failed test still leaves nothing running
        one.stop([], timeout_s=5)


def _supervise_until(one: fleet.Fleet, condition: Callable[[], object], timeout: float) -> None:
    def step() -> bool:
        one.supervise()
        return bool(condition())

    wait_for(step, timeout=timeout, interval=0.02, message="the fleet to get there")


def test_a_killed_child_is_restarted_and_logged(
    tmp_path: Path, events: list[dict[str, object]], started: list[fleet.Fleet]
) -> None:
    one = fleet.Fleet([_spec("sleeper", SLEEPER)], tmp_path, policy=FAST)
    started.append(one)
    one.start()
    first = one.pids()["sleeper"]
    wait_for(
        lambda: "started" in _text(tmp_path / "sleeper.log"), timeout=10, message="the first start"
    )
    os.kill(first, 9)

    _supervise_until(one, lambda: one.pids()["sleeper"] != first, timeout=10)
    second = one.pids()["sleeper"]
    assert one.running("sleeper") and not processes.pid_alive(first)
    [restarted] = [event for event in events if event["event"] == "dev.child-restarted"]
    assert restarted["child"] == "sleeper"
    assert restarted["exitStatus"] == -9
    assert restarted["reason"] == "was killed by SIGKILL"
    assert restarted["pid"] == second and restarted["count"] == 1

    # both starts are in the one log file, appended
    wait_for(
        lambda: _text(tmp_path / "sleeper.log").count("started") == 2,
        timeout=10,
        message="the second start in the log",
    )
    assert one.stop([], timeout_s=10)
    assert not processes.group_alive(second)


def test_what_is_left_of_a_dead_child_is_stopped_before_it_starts_again(
    tmp_path: Path, started: list[fleet.Fleet]
) -> None:
    # the main process forks a helper into its own group (like a pool process), then dies
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    print('helper', os.getpid(), flush=True); time.sleep(600)\n"
        "time.sleep(0.3); os._exit(1)\n"
    )
    one = fleet.Fleet([_spec("parent", code)], tmp_path, policy=FAST)
    started.append(one)
    one.start()
    first = one.pids()["parent"]
    helper_line = wait_for(
        lambda: [x for x in _text(tmp_path / "parent.log").splitlines() if "helper" in x],
        timeout=10,
        message="the helper to start",
    )
    helper = int(helper_line[0].split()[1])
    _supervise_until(one, lambda: one.pids()["parent"] != first, timeout=15)
    assert not processes.pid_alive(helper), "the old group must be gone before the restart"
    one.stop([], timeout_s=10)


def test_repeated_start_up_failures_give_up_with_a_clear_message(
    tmp_path: Path, events: list[dict[str, object]], started: list[fleet.Fleet]
) -> None:
    failing = _spec(
        "drivers",
        "import sys; print('start-up checks failed', flush=True); sys.exit(3)",
        startup_failure_statuses=frozenset({3}),
    )
    one = fleet.Fleet([failing, _spec("api", SLEEPER)], tmp_path, policy=FAST)
    started.append(one)
    one.start()
    deadline = time.monotonic() + 20
    with pytest.raises(fleet.GaveUp) as raised:
        while time.monotonic() < deadline:
            one.supervise()
            time.sleep(0.02)
    message = str(raised.value)
    assert message == (
        "the drivers process failed its start-up checks 3 times in a row "
        f"(the last time it exited with code 3); see {tmp_path / 'drivers.log'}"
    )
    restarted = [event["child"] for event in events if event["event"] == "dev.child-restarted"]
    assert restarted == ["drivers", "drivers"]
    assert (tmp_path / "drivers.log").read_text().count("start-up checks failed") == 3
    assert one.running("api")  # the others run until the caller stops the fleet
    assert one.stop([], timeout_s=10)
    assert not one.running("api")


def test_an_exit_status_that_is_not_a_start_up_failure_never_gives_up(
    tmp_path: Path, started: list[fleet.Fleet]
) -> None:
    one = fleet.Fleet(
        [_spec("crashy", "raise SystemExit(1)", startup_failure_statuses=frozenset({3}))],
        tmp_path,
        policy=FAST,
    )
    started.append(one)
    one.start()
    restarts_seen = 0
    deadline = time.monotonic() + 30
    while restarts_seen < 5 and time.monotonic() < deadline:
        restarts_seen += len(one.supervise())
        time.sleep(0.02)
    assert restarts_seen == 5
    one.stop([], timeout_s=10)


def test_stop_follows_the_stages_and_kills_a_child_that_ignores_sigterm(
    tmp_path: Path, started: list[fleet.Fleet]
) -> None:
    journal = tmp_path / "journal"
    on_term = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    open({journal!r}, 'a').write({name!r} + '\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('up', flush=True); time.sleep(600)\n"
    )
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    specs = [
        _spec(name, on_term.format(journal=str(journal), name=name)) for name in ("first", "second")
    ]
    one = fleet.Fleet([*specs, _spec("stubborn", stubborn)], tmp_path, policy=FAST)
    started.append(one)
    one.start()
    wait_for(
        lambda: all("up" in _text(tmp_path / f"{n}.log") for n in ("first", "second")),
        timeout=10,
        message="both children to install their handlers",
    )
    pids = one.pids()
    order: list[str] = []

    def before_second() -> None:
        order.append("first done" if not one.running("first") else "first still running")

    stages = [
        fleet.StopStage(terminate=("first",), wait_for=("first",)),
        fleet.StopStage(terminate=("second",), before=before_second),
    ]
    assert one.stop(stages, timeout_s=2) is False  # stubborn had to be killed
    assert order == ["first done"]
    assert journal.read_text().splitlines() == ["first", "second"]
    for pid in pids.values():
        assert not processes.group_alive(pid)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
