"""Child processes of ``occ dev``: one command in a process group of its own, its output logged.

``ChildProcess`` starts a command with its stdout and stderr on a pipe that a thread copies into
a ``logs.RotatingLog``, and stops its whole process group. The helpers answer whether a pid or a
group still runs and describe an exit status. Nothing here decides when to start or restart a
child (``occ.dev.fleet`` does); nothing here runs in production.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from occ.dev import logs

_PR_SET_PDEATHSIG: Final = 1


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a running process (a zombie counts as gone)."""
    if not _reachable(os.kill, pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # the state follows the parenthesised command name, which may itself hold ") "
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def group_alive(pgid: int) -> bool:
    """Whether any process of process group ``pgid`` still runs."""
    return _reachable(os.killpg, pgid)


def _reachable(send: Callable[[int, int], None], target: int) -> bool:
    """Whether ``send`` (``os.kill``, ``os.killpg``) finds ``target`` for signal 0: it exists,
    this user's or another's."""
    try:
        send(target, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, number: int) -> None:
    """Send ``number`` to every process of group ``pgid`` (gone or foreign groups are skipped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, number)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """``preexec_fn``: on Linux, receive SIGTERM when the parent dies (no orphans)."""
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def describe_exit(code: int) -> str:
    """``exited with code N`` or ``was killed by SIGNAME`` for a ``Popen.returncode``."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


class ChildProcess:
    """A command in a process group of its own (its pid is the group id), output to ``log``.

    The terminal's Ctrl-C reaches only the parent, which stops children in the order it
    chooses; on Linux a child also gets SIGTERM when the parent dies. The output pipe is
    copied by a daemon thread until every holder of it (the group's processes) has exited.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: logs.RotatingLog,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.name = name
        self.log = log
        self.process = subprocess.Popen(  # noqa: S603 - the caller's own argv
            list(argv),
            env=None if env is None else dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - prctl only, no locks taken
        )
        assert self.process.stdout is not None
        self._copier = log.copy_from(self.process.stdout, name=f"occ-dev-log-{name}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def group_alive(self) -> bool:
        """Whether the main process or any other process of its group still runs."""
        return self.process.poll() is None or group_alive(self.pid)

    def terminate(self) -> None:
        """SIGTERM to the main process only (Celery's warm shutdown, gunicorn's graceful)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def terminate_group(self) -> None:
        """SIGTERM to every process of the group (what is left after the main one died)."""
        signal_group(self.pid, signal.SIGTERM)

    def kill_group(self) -> None:
        signal_group(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)

    def wait_stopped(self, deadline: float, give_up: Callable[[], bool] = lambda: False) -> bool:
        """Wait until the process and its whole group are gone; at ``deadline`` (monotonic) or
        when ``give_up()`` says so, SIGKILL the group. True if it stopped by itself."""
        while True:
            if not self.group_alive():
                self.flush_log()
                return True
            if time.monotonic() >= deadline or give_up():
                break
            time.sleep(0.1)
        self.kill_group()
        self.flush_log()
        return False

    def flush_log(self, timeout: float = 2.0) -> None:
        """Let the copier write what the group printed last (it ends when the pipe closes)."""
        self._copier.join(timeout)
