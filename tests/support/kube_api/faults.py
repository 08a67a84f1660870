"""Scripted misbehaviour and the request journal of the fake Kubernetes API server.

Models what a real apiserver (or the network in front of it) does on a bad day: an error
``Status`` instead of an answer (500, 503, 429 with ``Retry-After``...), an answer so late
the client gives up, or a connection that closes without an answer. The journal records
every request as it arrived, with the code finally answered. It must not touch objects.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Request:
    """One request as the server saw it; ``status`` is None while unanswered or if closed."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str | None
    body: Any
    status: int | None = None


@dataclass(frozen=True)
class Fault:
    """What to do to the next requests matching ``method`` and the ``path_pattern`` regex."""

    method: str
    path_pattern: str
    status: int | None = None
    retry_after: int | None = None
    delay_s: float | None = None
    close: bool = False
    reason: str | None = None

    def matches(self, method: str, path: str) -> bool:
        return (
            self.method in ("*", method.upper()) and re.search(self.path_pattern, path) is not None
        )


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def default_reason(code: int) -> str:
    """The ``Status`` reason the apiserver uses for ``code``."""
    return _REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")


@dataclass
class _Pending:
    fault: Fault
    uses_left: int


class Faults:
    """Pending faults, each with a number of uses left; the first matching one applies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []

    def add(self, fault: Fault, times: int) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        if fault.status is None and fault.delay_s is None and not fault.close:
            raise ValueError("a fault needs a status, a delay or close=True")
        with self._lock:
            self._pending.append(
                _Pending(dataclasses.replace(fault, method=fault.method.upper()), times)
            )

    def take(self, method: str, path: str) -> Fault | None:
        """The fault for this request, spending one of its uses."""
        with self._lock:
            for pending in self._pending:
                if pending.fault.matches(method, path):
                    pending.uses_left -= 1
                    if pending.uses_left == 0:
                        self._pending.remove(pending)
                    return pending.fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()


class Journal:
    """Every request in arrival order; its status is filled in once answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Request] = []
        self._epoch = 0  # bumped by clear(), so a late answer never lands on a newer entry

    def record(self, request: Request) -> tuple[int, int]:
        with self._lock:
            self._entries.append(request)
            return self._epoch, len(self._entries) - 1

    def answered(self, ticket: tuple[int, int], status: int) -> None:
        epoch, index = ticket
        with self._lock:
            if epoch == self._epoch:
                self._entries[index] = dataclasses.replace(self._entries[index], status=status)

    def entries(self) -> list[Request]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._epoch += 1
