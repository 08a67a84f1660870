"""The ``local`` driver's runtime logs: a real gateway's ``gateway.log``, tail, since, follow."""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
import time
from pathlib import Path

import pytest

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.compute.local import logs as local_logs
from occ.foundation import ids
from tests.integration.drivers.local import support
from tests.support import log_follows
from tests.support.processes import wait_for
from tests.support.specs import log_target

CHATTY = [
    "sh",
    "-c",
    'for n in 1 2 3 4 5; do echo "line $n"; done; exec "$0" "$@"',
    sys.executable,
    "-m",
    "occ.drivers.gateway",
    *support.GATEWAY_ARGUMENTS,
]
"""A harness that prints five lines, then runs the stand-in gateway."""


@pytest.fixture
def running(root: Path) -> base.RevisionSpec:
    driver = LocalComputeDriver(root, harness_commands={"chatty": CHATTY})
    spec = support.revision(ids.new("agent"), harness="chatty")
    support.until_ready(driver, spec)
    log = support.revision_dir(root, spec) / "gateway.log"
    wait_for(lambda: b"gateway.started" in log.read_bytes(), timeout=10, message="the started line")
    return spec


def test_tail_reads_the_last_lines_of_a_real_gateway(
    root: Path, running: base.RevisionSpec
) -> None:
    reader = local_logs.LocalLogs(root)
    everything = list(reader.read_logs(log_target(running), runtime_logs.LogQuery()))
    assert everything[:5] == [f"line {n}" for n in range(1, 6)]
    assert json.loads(everything[5])["event"] == "gateway.started"
    last_two = list(reader.read_logs(log_target(running), runtime_logs.LogQuery(tail=2)))
    assert last_two == everything[-2:]
    assert list(reader.read_logs(log_target(running), runtime_logs.LogQuery(tail=0))) == []


def test_since_starts_at_the_first_line_stamped_at_or_after_it(
    root: Path, running: base.RevisionSpec
) -> None:
    reader = local_logs.LocalLogs(root)
    before = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    after = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    early = list(reader.read_logs(log_target(running), runtime_logs.LogQuery(since=before)))
    assert json.loads(early[0])["event"] == "gateway.started"  # unstamped lines before it go
    assert list(reader.read_logs(log_target(running), runtime_logs.LogQuery(since=after))) == []


def test_follow_streams_new_lines_and_ends_at_its_deadline(
    root: Path, running: base.RevisionSpec
) -> None:
    reader = local_logs.LocalLogs(root)
    log = support.revision_dir(root, running) / "gateway.log"
    query = runtime_logs.LogQuery(tail=0, follow=True, follow_s=3.0)
    started = time.monotonic()
    lines = reader.read_logs(log_target(running), query)
    seen: list[str] = []

    def write_later() -> None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write("appended one\nappended")
            handle.flush()
            time.sleep(0.5)
            handle.write(" two\n")

    writer = threading.Thread(target=write_later)
    writer.start()
    seen.extend(lines)
    writer.join()
    assert seen == ["appended one", "appended two"]
    assert 2.5 <= time.monotonic() - started < 6.0


def test_close_ends_a_follow_early_and_a_rotated_file_is_read_anew(
    root: Path, running: base.RevisionSpec
) -> None:
    reader = local_logs.LocalLogs(root)
    log = support.revision_dir(root, running) / "gateway.log"
    lines = log_follows.follow(reader, running, 30.0)
    log.rename(log.with_name("gateway.log.1"))
    log.write_text("after rotation\n", encoding="utf-8")
    assert next(iter(lines)) == "after rotation"
    log_follows.assert_closed_early(lines, within_s=5.0)


def test_tail_reads_on_into_the_rotated_files(root: Path, running: base.RevisionSpec) -> None:
    target = log_target(running)
    reader = local_logs.LocalLogs(root)
    log = support.revision_dir(root, running) / "gateway.log"
    current = list(reader.read_logs(target, runtime_logs.LogQuery()))
    log.with_name("gateway.log.2").write_text("oldest 1\noldest 2\n", encoding="utf-8")
    log.with_name("gateway.log.1").write_text("older\n", encoding="utf-8")
    everything = list(reader.read_logs(target, runtime_logs.LogQuery()))
    assert everything == ["oldest 1", "oldest 2", "older", *current]
    last = list(reader.read_logs(target, runtime_logs.LogQuery(tail=len(current) + 2)))
    assert last == ["oldest 2", "older", *current]
    assert list(reader.read_logs(target, runtime_logs.LogQuery(tail=1))) == current[-1:]


def test_a_revision_without_a_log_is_unavailable(root: Path) -> None:
    spec = support.revision(ids.new("agent"))
    with pytest.raises(base.PermanentDriverError) as raised:
        local_logs.LocalLogs(root).read_logs(log_target(spec), runtime_logs.LogQuery())
    assert raised.value.code == runtime_logs.UNAVAILABLE
