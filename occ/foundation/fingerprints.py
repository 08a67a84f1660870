"""Short, non-reversible fingerprints of secret values, for proving delivery without showing them.

Standard library only: the stand-in gateway imports it too.
"""

from __future__ import annotations

import hashlib

LENGTH = 12
"""Hex characters kept: enough to tell two credentials apart, far too few to guess one."""


def of(value: str) -> str:
    """The fingerprint of ``value``: the first ``LENGTH`` hex digits of its SHA-256."""
    return hashlib.sha256(("occ-credential:" + value).encode()).hexdigest()[:LENGTH]
