"""A child worker of an older release than this one: the same code, reading ``occ.run_work``
payloads up to version 1 only (``older_release_site/sitecustomize.py``, loaded first)."""

from __future__ import annotations

import os
from pathlib import Path


def environment() -> dict[str, str]:
    """What a child worker's environment adds to play the older release."""
    site = Path(__file__).resolve().parent / "older_release_site"
    python_path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": python_path}
