"""A child process whose wall clock is shifted: libfaketime preloaded (``scripts/faketime.py``,
installed with apt-get when missing, as ``make test`` does), with the monotonic clock left
alone and ``time.sleep`` replaced at start-up (``faketime_site/sitecustomize.py`` says why)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts import faketime


def environment(offset_s: int) -> dict[str, str]:
    """What a child's environment adds to read a wall clock ``offset_s`` seconds off; the test
    fails (it is never skipped) when libfaketime cannot be had."""
    try:
        library = faketime.install()
    except faketime.FaketimeError as exc:
        pytest.fail(f"libfaketime is needed to shift a worker's clock: {exc}")
    site = Path(__file__).resolve().parent / "faketime_site"
    python_path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {
        **faketime.environment(library, offset_s),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": python_path,
    }
