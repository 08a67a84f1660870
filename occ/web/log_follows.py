"""How many log follows one principal holds open at once in this API process.

A follow (``GET .../logs?follow=true``) holds a connection, a greenlet and a Compute Driver's
stream for up to five minutes; unbounded, one principal could hold thousands of them and use
up the process's connections and file descriptors. A follow past ``MAX_PER_PRINCIPAL`` is
refused with 429 ``RATE_LIMITED``. The count is this process's: an API of N processes allows N
times as many, which the per-principal request limit bounds as well.
"""

from __future__ import annotations

import collections
import threading
from typing import Final

from occ.foundation import errors

MAX_PER_PRINCIPAL: Final = 10
RETRY_AFTER_S: Final = 5

_lock = threading.Lock()
_held: collections.Counter[str] = collections.Counter()


def enter(principal_id: str) -> None:
    """Count one more follow of ``principal_id``, or ``RateLimited`` when it holds the most."""
    with _lock:
        if _held[principal_id] >= MAX_PER_PRINCIPAL:
            raise errors.RateLimited(
                f"at most {MAX_PER_PRINCIPAL} log follows at once; end one or retry later",
                limit=MAX_PER_PRINCIPAL,
                remaining=0,
                retry_after_s=RETRY_AFTER_S,
            )
        _held[principal_id] += 1


def leave(principal_id: str) -> None:
    """Count one follow of ``principal_id`` less (it ended, or was never streamed)."""
    with _lock:
        _held[principal_id] -= 1
        if _held[principal_id] <= 0:
            del _held[principal_id]


def held(principal_id: str) -> int:
    """How many follows ``principal_id`` holds now."""
    with _lock:
        return _held[principal_id]
