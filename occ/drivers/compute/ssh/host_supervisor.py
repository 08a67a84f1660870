"""Running a unit file's service without systemd, for hosts whose PID 1 is not systemd.

Standard library only: the bundle copies this file beside the host helper (``hostside``), which
uses it in containers and CI. It honours the unit's ``User``, ``WorkingDirectory``,
``Environment`` and ``ExecStart``, with ``NoNewPrivileges`` and the ``LimitNOFILE`` and
``TasksMax`` limits (the namespace sandboxing of ``Protect*`` needs systemd). A service's state
is two files beside each other: ``<state>.pid`` (its pid and the start time the kernel gives
it, so a reused pid is never taken for the service) and ``<state>.log`` (its output).
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource
import shlex
import signal
import time
from pathlib import Path

_START_TIMEOUT_S = 5.0
_PR_SET_NO_NEW_PRIVS = 38
_LIMITS = {"LimitNOFILE": resource.RLIMIT_NOFILE, "TasksMax": resource.RLIMIT_NPROC}


def parse_unit(text: str) -> dict[str, list[str]]:
    """The ``[Service]`` keys of a unit file, each with its values in order."""
    keys: dict[str, list[str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line:
            key, _, value = line.partition("=")
            keys.setdefault(key.strip(), []).append(value.strip())
    return keys


def running_pid(state: Path) -> int | None:
    """The service's pid while it still runs (its recorded start time must match)."""
    try:
        pid_text, started = state.with_suffix(".pid").read_text().split()
        stat = Path(f"/proc/{pid_text}/stat").read_text()
    except (FileNotFoundError, ValueError):
        return None
    fields = stat.rpartition(")")[2].split()
    if fields[0] in ("Z", "X") or fields[19] != started:
        return None
    return int(pid_text)


def stop(state: Path, timeout_s: float) -> None:
    """SIGTERM the service's process group, SIGKILL it after ``timeout_s``; forget its pid."""
    pid = running_pid(state)
    if pid is not None:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while running_pid(state) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if running_pid(state) is not None:
            os.killpg(pid, signal.SIGKILL)
    state.with_suffix(".pid").unlink(missing_ok=True)


def start(state: Path, service: dict[str, list[str]]) -> bool:
    """Start the service's ``ExecStart`` detached, as its user; whether it runs."""
    state.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pid_file = state.with_suffix(".pid")
    pid_file.unlink(missing_ok=True)
    if os.fork() != 0:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return running_pid(state) is not None
    try:  # the child: a session of its own, then the grandchild runs the service
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        _become_service(state, service)
    finally:
        os._exit(127)


def _become_service(state: Path, service: dict[str, list[str]]) -> None:
    user = pwd.getpwnam(service["User"][-1])
    environment = {"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"}
    for line in service.get("Environment", []):
        for entry in shlex.split(line):
            name, _, value = entry.partition("=")
            environment[name] = value
    argv = shlex.split(service["ExecStart"][-1])
    os.setpgid(0, 0)  # a group of its own: a stop signals the service and its children
    log = os.open(state.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.closerange(3, 1024)
    stat = Path(f"/proc/{os.getpid()}/stat").read_text().rpartition(")")[2].split()
    state.with_suffix(".pid").write_text(f"{os.getpid()} {stat[19]}\n")
    os.chdir(service.get("WorkingDirectory", ["/"])[-1])
    for key, limit in _LIMITS.items():
        if key in service:
            cap = int(service[key][-1])
            resource.setrlimit(limit, (cap, cap))
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    if service.get("NoNewPrivileges", ["no"])[-1] == "yes":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    os.execve(argv[0], argv, environment)  # noqa: S606 - the unit's own command
