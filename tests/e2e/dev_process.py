"""A running ``occ dev`` for the end-to-end tests: starting it, reading its output, stopping it.

Starts the real command as a subprocess with no ``OCC_*`` variables (plus what a test adds),
so it takes the fresh-machine path; its output is collected on background threads. Asserts
nothing about what ``occ dev`` does: the tests do.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STOP_DEADLINE_S = 60.0


@dataclass
class DevProcess:
    """A running ``occ dev`` with its output collected on background threads."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    readers: list[threading.Thread] = field(default_factory=list)

    def start_readers(self) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None

        def read_stdout() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.stdout.append(line)
                self.lines.put(line)

        def read_stderr() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.stderr.append(line)

        for target in (read_stdout, read_stderr):
            reader = threading.Thread(target=target, daemon=True)
            reader.start()
            self.readers.append(reader)

    def join_readers(self, timeout_s: float) -> None:
        """Wait until both pipes are read to the end (after the process exited)."""
        for reader in self.readers:
            reader.join(timeout_s)
        assert not any(reader.is_alive() for reader in self.readers), "output still open"

    def wait_ready(self, deadline_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            event: dict[str, Any] = json.loads(line)
            return event
        raise AssertionError(
            f"no dev.ready line within {deadline_s} s "
            f"(exit code {self.process.poll()}); stderr: {''.join(self.stderr)}"
        )

    def stop(self, sig: signal.Signals, deadline_s: float) -> int:
        self.process.send_signal(sig)
        try:
            return self.process.wait(deadline_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"occ dev did not stop within {deadline_s} s after {sig.name}"
            ) from None


def environment() -> dict[str, str]:
    """This process's environment without any ``OCC_*`` variable."""
    return {name: value for name, value in os.environ.items() if not name.startswith("OCC_")}


def start(
    home: Path,
    extra_environment: dict[str, str] | None = None,
    arguments: tuple[str, ...] = (),
) -> DevProcess:
    """``occ dev --home HOME --port 0 [ARGUMENTS]`` in its own session, its output being read."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from occ.cli import main; main()",
            "dev",
            "--home",
            str(home),
            "--port",
            "0",
            *arguments,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environment(), **(extra_environment or {})},
        start_new_session=True,
    )
    dev = DevProcess(process)
    dev.start_readers()
    return dev


def stop_all(started: list[DevProcess]) -> None:
    """Interrupt whatever still runs (a failed test still leaves nothing running)."""
    for dev in started:
        if dev.process.poll() is None:
            dev.process.send_signal(signal.SIGINT)
            try:
                dev.process.wait(STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                dev.process.kill()
                dev.process.wait()
