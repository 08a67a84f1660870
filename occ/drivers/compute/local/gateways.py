"""Gateway processes: their command and environment, starting, finding, probing, ending.

Each revision runs one gateway on a free 127.0.0.1 port (the one it had before, when it is
restarted and that port is free; a line in its log says so when it is not): the stand-in gateway
(``python -m occ.drivers.gateway``) or the command configured for the revision's harness, started
detached in its own session with a minimal environment (``PATH``, ``HOME`` = the revision
directory, the hooks' opaque placeholders, and the ``OCC_GATEWAY_DIR`` marker). Gateways
outlive the worker that started them; a worker finds a revision's process again through
``runtime.json`` and ``/proc`` (the pid is alive, not a zombie, and its command line
mentions the revision id or its environment carries the revision's marker), so a recycled
pid is never mistaken for a gateway.

A credential reaches a gateway only as a file path (``--credential-file`` or the
``{credential_file}`` placeholder), never in its environment or command line. This module
decides nothing about the contract's flow (restarts, hooks, journal): the driver does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import occ
from occ.drivers.compute import base, standin

HOST: Final = standin.LOOPBACK
"""Where every gateway listens."""

MARKER: Final = "OCC_GATEWAY_DIR"
"""Environment variable naming a gateway's revision directory: how ``/proc`` finds it."""

PLACEHOLDERS: Final = (
    "{port}",
    "{revision_id}",
    "{agent_id}",
    "{generation}",
    "{config}",
    "{credential_file}",
)
"""What a harness command template may contain; each is replaced in every argument."""

CREDENTIAL_PLACEHOLDER: Final = "{credential_file}"
"""The placeholder a harness needs a delivered credential for."""

IDENTITY_SETTLE_S: Final = 0.25
"""How long a live process's empty ``/proc`` identity is read again (exec or exit ends it)."""

_PROC: Final = Path("/proc")

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Gateways this process started, only so their exit status is collected (no zombies)."""
_children_lock = threading.Lock()


# -- launching -----------------------------------------------------------------------------


def needs_credential(template: Sequence[str] | None) -> bool:
    """Whether a harness command template cannot run without a credential file."""
    return template is not None and any(CREDENTIAL_PLACEHOLDER in part for part in template)


def command(
    template: Sequence[str] | None,
    revision: base.RevisionSpec,
    *,
    port: int,
    snapshot: Path,
    credential_file: Path | None,
) -> list[str]:
    """The gateway's argv: the stand-in gateway without a template, else the template filled."""
    if template is None:
        argv = [
            sys.executable,
            "-m",
            "occ.drivers.gateway",
            "--port",
            str(port),
            *standin.revision_arguments(revision, config=str(snapshot)),
        ]
        if credential_file is not None:
            argv += ["--credential-file", str(credential_file)]
        return argv
    values = dict(
        zip(
            PLACEHOLDERS,
            (
                str(port),
                revision.revision_id,
                revision.agent_id,
                str(revision.configuration_generation),
                str(snapshot),
                "" if credential_file is None else str(credential_file),
            ),
            strict=True,
        )
    )
    argv = []
    for part in template:
        for placeholder, value in values.items():
            part = part.replace(placeholder, value)  # noqa: PLW2901
        argv.append(part)
    return argv


def environment(directory: Path, launch: Mapping[str, str], *, stand_in: bool) -> dict[str, str]:
    """The gateway's whole environment: nothing of the worker's (no settings, no keys)."""
    result = dict(launch)
    result.update(
        {
            "PATH": os.pathsep.join(os.get_exec_path()),
            "HOME": str(directory),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            MARKER: str(directory),
        }
    )
    if stand_in:
        # The stand-in gateway is this package: find it even without an installation.
        result["PYTHONPATH"] = str(Path(occ.__file__).resolve().parent.parent)
    return result


def start(argv: Sequence[str], directory: Path, env: Mapping[str, str], log_descriptor: int) -> int:
    """Start ``argv`` detached in ``directory``, its output to ``log_descriptor`` (the pipe of
    the log's writer, ``logfiles``); its pid (``OSError``)."""
    process = subprocess.Popen(  # noqa: S603 - our own argv, no shell
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=log_descriptor,
        stderr=subprocess.STDOUT,
        cwd=directory,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )
    with _children_lock:
        _children[process.pid] = process
    return process.pid


def free_port(preferred: int | None = None) -> int:
    """``preferred`` when it can be bound on 127.0.0.1 now, else any free port."""
    for candidate in (() if preferred is None else (preferred,)) + (0,):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # as the gateway's server binds: past the TIME_WAIT of its previous connections,
            # never beside a socket that listens
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((HOST, candidate))
            except OSError:
                continue
            port: int = probe.getsockname()[1]
            return port
    raise OSError("no free port on 127.0.0.1")


def port_taken_line(previous: int, port: int) -> bytes:
    """The log line of a gateway that could not have its previous port back."""
    document = {
        "event": "gateway.port_taken",
        "port": previous,
        "newPort": port,
        "message": f"port {previous} of this revision is taken by another process; its "
        f"gateway listens on {port} now, and the Agent's endpoint follows",
    }
    return (json.dumps(document, separators=(",", ":")) + "\n").encode()


# -- finding -------------------------------------------------------------------------------


def reap_children() -> None:
    """Collect the exit status of gateways this process started and that have exited."""
    with _children_lock:
        for pid, process in list(_children.items()):
            if process.poll() is not None:
                del _children[pid]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    reap_children()
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:
        return _exists(pid)
    state = stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"], ["x"])


def is_gateway(pid: int, directory: Path, revision_id: str) -> bool:
    """Whether ``pid`` is alive and is this revision's gateway (not a recycled pid).

    A live process shows an empty command line and environment for a moment while it
    execs (the parent's ``Popen`` has returned by then) and while it exits; a kernel
    thread shows them empty for good. So an empty identity is read again for up to
    ``IDENTITY_SETTLE_S``: the exec'ing gateway is found, the others are not ours.
    """
    if not _PROC.is_dir():
        return alive(pid)  # no /proc (not Linux): trust runtime.json
    deadline = time.monotonic() + IDENTITY_SETTLE_S
    while alive(pid):
        arguments = _entries(_PROC / str(pid) / "cmdline")
        if revision_id.encode() in arguments:
            return True  # the common case: no need to read the environment
        environment = _environment_of(pid)
        if arguments or environment:
            return _marker(directory) in environment
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return False


def marked_processes(directory: Path) -> list[int]:
    """Live processes whose environment carries this revision directory's marker."""
    marker = _marker(directory)
    return [pid for pid, entries in _process_environments() if marker in entries and alive(pid)]


def processes_under(agents: Path) -> list[int]:
    """Pids of every live process marked with a revision directory below ``agents``."""
    prefix = os.fsencode(f"{MARKER}={agents}{os.sep}")
    return [
        pid
        for pid, entries in _process_environments()
        if any(entry.startswith(prefix) for entry in entries)
    ]


def running_directories(agents: Path) -> dict[Path, int]:
    """Every live gateway below ``agents`` by its revision directory: one pass over
    ``/proc`` for the whole fleet (the marker in each environment names the directory)."""
    prefix = os.fsencode(f"{MARKER}=")
    below = os.fsencode(f"{agents}{os.sep}")
    found: dict[Path, int] = {}
    for pid, entries in _process_environments():
        for entry in entries:
            if entry.startswith(prefix) and entry[len(prefix) :].startswith(below):
                if alive(pid):
                    found[Path(os.fsdecode(entry[len(prefix) :]))] = pid
                break
    return found


def recorded_process(runtime: Mapping[str, Any], directory: Path, revision_id: str) -> int | None:
    """The pid ``runtime.json`` records, when it still is this revision's gateway."""
    pid = runtime.get("pid")
    if (
        isinstance(pid, int)
        and runtime.get("port") is not None
        and is_gateway(pid, directory, revision_id)
    ):
        return pid
    return None


def revision_processes(runtime: Mapping[str, Any], directory: Path, revision_id: str) -> list[int]:
    """The recorded gateway (first) and any other process marked with this directory.

    A revision without a directory has none (retirement kills before it removes), which
    spares repeated retirements of old revisions a walk through ``/proc``.
    """
    if not directory.is_dir():
        return []
    recorded = recorded_process(runtime, directory, revision_id)
    found = [] if recorded is None else [recorded]
    found.extend(pid for pid in marked_processes(directory) if pid != recorded)
    return found


# -- ending --------------------------------------------------------------------------------


def terminate(operation: base.Operation, pid: int, *, timeout_s: float) -> None:
    """SIGTERM the gateway's process group, SIGKILL it after ``timeout_s``."""
    try:
        group = os.getpgid(pid) == pid  # started in its own session: it leads a group
    except ProcessLookupError:
        return
    _signal(pid, signal.SIGTERM, group=group)
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        operation.wait(0.05)
    # Whatever is left: the gateway if it ignored SIGTERM, children it left in its group.
    _signal(pid, signal.SIGKILL, group=group)
    deadline = time.monotonic() + 5.0
    while alive(pid):
        if time.monotonic() >= deadline:
            raise base.TransientDriverError("RUNTIME_STOP_TIMEOUT", "the gateway survived SIGKILL")
        operation.wait(0.05)


# -- /proc ---------------------------------------------------------------------------------


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _marker(directory: Path) -> bytes:
    return os.fsencode(f"{MARKER}={directory}")


def _process_environments() -> Iterator[tuple[int, list[bytes]]]:
    """Every readable process environment (only this user's processes are readable)."""
    if not _PROC.is_dir():
        return
    for entry in os.scandir(_PROC):
        if entry.name.isdigit():
            entries = _environment_of(int(entry.name))
            if entries:
                yield int(entry.name), entries


def _environment_of(pid: int) -> list[bytes]:
    return _entries(_PROC / str(pid) / "environ")


def _entries(path: Path) -> list[bytes]:
    """The NUL-separated entries of a ``/proc`` file, without the empty ones."""
    try:
        return [entry for entry in path.read_bytes().split(b"\0") if entry]
    except OSError:
        return []


def _signal(pid: int, number: signal.Signals, *, group: bool) -> None:
    """Signal the process group ``pid`` leads (or only the process); gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(pid, number)
        else:
            os.kill(pid, number)
