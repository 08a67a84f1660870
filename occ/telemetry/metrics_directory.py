"""Who writes into prometheus-client's multiprocess directory, and clearing what is stale.

``PROMETHEUS_MULTIPROC_DIR`` names one directory per program (the API's gunicorn, the control
worker, the driver worker, beat): the processes of one program write a file each there and a
scrape of that program sums them. The first process of a program (gunicorn's arbiter, the Celery
main process, beat) claims the directory before it records anything: it takes the lock file
``.occ-owner.lock`` (held until the last process of the program exits: forked children inherit
it), creates the directory if needed and removes every ``*.db`` file left by a previous run
(pids are reused, so a stale file would otherwise be read back and added to). Its forked
children inherit the claim. A process that finds the lock held by another program (a
``celery inspect ping`` health check, a one-off command, or a second program given the same
directory) keeps its metrics in memory and writes nothing there; the programs' start-up
checks (``require_claimed``) refuse to run that way.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from prometheus_client import multiprocess, values

from occ.foundation import errors

VARIABLE: Final = "PROMETHEUS_MULTIPROC_DIR"
LOCK_NAME: Final = ".occ-owner.lock"


@dataclass(frozen=True)
class Claim:
    """This process's relation to the multiprocess directory."""

    directory: Path | None
    """The directory named by ``PROMETHEUS_MULTIPROC_DIR`` (``None``: single-process mode)."""
    claimed: bool
    """This process's program owns the directory: it writes there and scrapes sum it."""
    reason: str = ""
    """Why a named directory is not claimed."""


@dataclass
class _ProcessState:
    claim: Claim | None = None
    lock_fd: int | None = None
    """Kept open for the life of the program (forked children inherit it)."""


_STATE: Final = _ProcessState()


def claim(environ: Mapping[str, str] | None = None) -> Claim:
    """Claim the directory for this process's program, once (forked children inherit it).

    Call it before any metric records a value.
    """
    if _STATE.claim is None:
        taken = _STATE.claim = _take(os.environ if environ is None else environ)
        if taken.directory is not None and not taken.claimed:
            # never add files to another program's directory
            values.ValueClass = values.MutexValue
    return _STATE.claim


def current() -> Claim:
    """The claim made by this process or inherited from its parent (made now if none)."""
    return claim() if _STATE.claim is None else _STATE.claim


def require_claimed() -> None:
    """Raise ``DependencyUnavailable`` when a directory is named but this program lacks it."""
    found = current()
    if found.directory is not None and not found.claimed:
        raise errors.DependencyUnavailable(
            f"{VARIABLE} {found.directory}: {found.reason}; give each program its own directory"
        )


def mark_dead(pid: int) -> None:
    """Forget the live gauges of a process of this program that exited."""
    found = current()
    if found.claimed and found.directory is not None:
        multiprocess.mark_process_dead(pid, str(found.directory))  # type: ignore[no-untyped-call]


def _take(environ: Mapping[str, str]) -> Claim:
    named = environ.get(VARIABLE)
    if not named:
        return Claim(None, claimed=False)
    directory = Path(named)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        return Claim(directory, claimed=False, reason=f"cannot be used ({exc.strerror})")
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(descriptor)
        return Claim(directory, claimed=False, reason=f"in use by another program (pid {holder})")
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    _STATE.lock_fd = descriptor
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)
    return Claim(directory, claimed=True)
