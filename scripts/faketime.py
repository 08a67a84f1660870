"""libfaketime for the clock-skew tests: find the preloadable library, installing Debian's
``faketime`` package with apt-get when it is missing (as root).

A process started with ``LD_PRELOAD=<library>`` and ``FAKETIME=+60s`` (``environment``) reads a
wall clock a minute ahead (its monotonic clock too, unless ``FAKETIME_DONT_FAKE_MONOTONIC`` is
set). Used by ``scripts/test_services.py`` (so ``make test`` installs it) and
by the tests that start a worker with a shifted clock.
"""

from __future__ import annotations

import os
from pathlib import Path

from scripts import debian_packages
from scripts.service_finding import say

LIBRARY_NAME = "libfaketimeMT.so.1"
"""The multi-threaded variant (the workers run threads)."""

SEARCHED = (
    Path("/usr/lib/x86_64-linux-gnu/faketime"),
    Path("/usr/lib/aarch64-linux-gnu/faketime"),
    Path("/usr/lib/faketime"),
    Path("/usr/local/lib/faketime"),
)


class FaketimeError(RuntimeError):
    """libfaketime is missing and could not be installed."""


def library() -> Path | None:
    """The preloadable library (``OCC_TEST_FAKETIME_LIB`` when set), or ``None``."""
    given = os.environ.get("OCC_TEST_FAKETIME_LIB")
    if given:
        return Path(given) if Path(given).exists() else None
    for directory in SEARCHED:
        candidate = directory / LIBRARY_NAME
        if candidate.exists():
            return candidate
    return None


def install() -> Path:
    """The library, after ``apt-get install faketime`` when it is missing (about 10 s)."""
    found = library()
    if found is not None:
        return found
    say("installing faketime (apt-get)")
    try:
        debian_packages.install("faketime", timeout_s=600)
    except debian_packages.PackagesUnavailable as exc:
        raise FaketimeError(f"no libfaketime: {exc}") from exc
    found = library()
    if found is None:
        raise FaketimeError("faketime is installed but its library was not found")
    return found


def environment(library_path: Path, offset_s: int) -> dict[str, str]:
    """What a process's environment adds to read a wall clock ``offset_s`` seconds off."""
    return {
        "LD_PRELOAD": str(library_path),
        "FAKETIME": f"{offset_s:+d}s",
        "FAKETIME_DONT_RESET": "1",
    }
