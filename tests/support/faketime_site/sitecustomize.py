"""Loaded first by a Python child whose clock libfaketime shifts (``shifted_clocks``).

libfaketime 0.9.10, with the monotonic clock left alone, fails every absolute
``clock_nanosleep`` with EINVAL, which is how Python's ``time.sleep`` waits; faking the
monotonic clock too would instead stretch every timed lock and event wait by the offset. So
``time.sleep`` here waits on a lock with a timeout (``pthread_cond_timedwait``, which works),
before anything imports it.
"""

from __future__ import annotations

import threading
import time
from typing import SupportsIndex


def _sleep(seconds: float | SupportsIndex) -> None:
    length = float(seconds)
    if length < 0:
        raise ValueError("sleep length must be non-negative")
    lock = threading.Lock()
    lock.acquire()
    lock.acquire(timeout=length)


time.sleep = _sleep
