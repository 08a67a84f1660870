"""Claiming prometheus-client's multiprocess directory, in fresh interpreters (the claim is
per process): the first process of a program clears what a previous run left, its forked
children share the claim, any other process writes nothing there and cannot start a program."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from occ import metrics_directory

PRELUDE = """
import os, sys, prometheus_client
from occ import errors, metrics_directory
found = metrics_directory.claim()
counter = prometheus_client.Counter("probe_total", "A probe.")
"""


def _run(directory: Path | None, code: str, **popen: object) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != metrics_directory.VARIABLE}
    if directory is not None:
        env[metrics_directory.VARIABLE] = str(directory)
    return subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,  # type: ignore[call-overload]
    )


def _output(directory: Path | None, code: str) -> str:
    process = _run(directory, code)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    return out.strip()


def _files(directory: Path) -> set[str]:
    return {path.name for path in directory.glob("*.db")}


def test_the_first_process_creates_the_directory_and_clears_stale_files(tmp_path: Path) -> None:
    directory = tmp_path / "metrics" / "web"
    directory.mkdir(parents=True)
    (directory / "counter_4242.db").write_bytes(b"stale")
    (directory / "histogram_7.db").write_bytes(b"stale")
    (directory / "notes.txt").write_text("kept")
    out = _output(directory, "counter.inc(); print(found.claimed, os.getpid())")
    claimed, pid = out.split()
    assert claimed == "True"
    assert _files(directory) == {f"counter_{pid}.db"}
    assert (directory / "notes.txt").exists()
    # the next run (the lock is free again) clears the last run's files before its own exist
    claimed, next_pid = _output(directory, "print(found.claimed, os.getpid())").split()
    assert claimed == "True"
    assert _files(directory) == {f"counter_{next_pid}.db"}


def test_forked_children_share_the_claim_and_others_write_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "drivers"
    holder = _run(
        directory,
        """
        child = os.fork()
        if child == 0:
            counter.inc()  # a pool process: its own file in the program's directory
            os._exit(0 if metrics_directory.current().claimed else 1)
        _, status = os.waitpid(child, 0)
        print(found.claimed, os.waitstatus_to_exitcode(status), child, flush=True)
        sys.stdin.readline()
        """,
        stdin=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdin is not None
    claimed, child_status, child = holder.stdout.readline().split()
    assert (claimed, child_status) == ("True", "0")
    program = {f"counter_{holder.pid}.db", f"counter_{child}.db"}
    assert _files(directory) == program
    # a health check, a one-off command or a second program given the same directory
    out = _output(
        directory,
        """
        counter.inc()
        try:
            metrics_directory.require_claimed()
        except errors.DependencyUnavailable as exc:
            print(found.claimed, exc.detail)
        """,
    )
    assert out.startswith(f"False {metrics_directory.VARIABLE} {directory}: in use by another")
    assert f"(pid {holder.pid})" in out
    assert _files(directory) == program, "a bystander wrote into the directory"
    holder.communicate("\n", timeout=30)
    assert holder.returncode == 0


def test_without_a_directory_nothing_is_claimed_or_required(tmp_path: Path) -> None:
    out = _output(None, "metrics_directory.require_claimed(); print(found)")
    assert out == "Claim(directory=None, claimed=False, reason='')"


def test_a_directory_that_cannot_be_made_is_not_claimed(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    out = _output(tmp_path / "a-file" / "web", "counter.inc(); print(found.claimed, found.reason)")
    assert out.startswith("False cannot be used")
