"""The failures of ``occ dev``: each is reported in one line on stderr and exits 1.

Messages name a log file or directory to look at; they never carry a secret or a URL with a
password, and no traceback reaches the terminal.
"""

from __future__ import annotations


class DevError(Exception):
    """A failure ``occ dev`` reports in one line and exits 1 for."""


class ServiceError(DevError):
    """An embedded service (PostgreSQL, Redis) could not be started."""


class Interrupted(BaseException):
    """A stop signal arrived while start-up was blocked (not an ``Exception``: never wrapped)."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, else its class name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
